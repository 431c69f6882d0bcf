"""Batched, KV-cached, streaming generation of N variants of one prompt.

All N variants run as one batch of decoding rows (engine/decoding/step.py: one preallocated KV
cache, a sliding window, the head's decoding state), and every row is drawn by the one sampler
(engine/decoding/token_sampler.py) whose noise comes from (seed + i, step) alone, so a variant is
reproduced exactly from its seed whatever N is. On the CPU a variant's row leaves the batch when
the variant ends, so the remaining rows' steps get cheaper. Decoding is two-stage (docs/architecture.md,
"Two-level distribution"): a group, then a token inside it; one stage for one-group heads, flat
sampling and termination heads around a one-group head. `greedy`, `top_k` and `top_p` give
exactly the NMST paper's greedy, top-k and nucleus decoders on a termination head.

Several prompts of equal token length can share one batch (`prompts=`, one per row, used by
the evaluation protocols): row i decodes prompts[i] with seed `seed + i`, and its tokens are
those of decoding prompts[i] alone with that seed, since rows never interact.

Termination heads (ST/NMST, engine/heads/termination.py) decode here too: the eos group is drawn
with probability exactly α_t (ST carries its running log(1 − α) per row, starting from the
prompt's factors), and group controls act only on the inner head's groups (the head's
`group_stage_scores`).

The context always starts with eos, the document separator used in training, so that an
empty prompt means "start of a document". When the context outgrows the model's block size,
it is cut to its last half-block and re-encoded (a sliding window), so any length works. A variant
stuck repeating a few tokens ends with `FINISH_LOOP` (engine/decoding/loops.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import nullcontext
from typing import Any

import torch

from engine.decoding.backbone_runner import BackboneRunner
from engine.decoding.cpu_threads import decode_threads
from engine.decoding.loops import FINISH_LOOP, LoopGuard
from engine.decoding.real_words import WordSpeller, trailing_partial
from engine.decoding.sentence_end import FINISH_SENTENCE, end_at_sentence, without_open_ends
from engine.decoding.settings import DecodeConfig
from engine.decoding.step import LanguageModelRows
from engine.decoding.stream import (
    FINISH_EOS,
    FINISH_LENGTH,
    INCOMPLETE_CHAR,
    RowStream,
    TokenEvent,
    Variant,
    refuse_copy_limit,
)
from engine.decoding.text_cleanup import GeneratedText
from engine.model import LanguageModel
from engine.tokenizer import VariorumTokenizer
from engine.torch_modes import eval_mode


def _row_prompts(
    eos_id: int, prompt_ids: Sequence[int], n: int, prompts: Sequence[Sequence[int]] | None
) -> list[list[int]]:
    """Each row's context [eos, *prompt]: `prompt_ids` for all n rows, or prompts[i] for row i."""
    if prompts is None:
        return [[eos_id, *prompt_ids]] * n
    if prompt_ids:
        raise ValueError("give either prompt_ids (one prompt for every variant) or prompts (one per row), not both")
    if len(prompts) != n:
        raise ValueError(f"{len(prompts)} prompts for {n} variants; give one prompt per variant")
    lengths = sorted({len(p) for p in prompts})
    if len(lengths) > 1:
        raise ValueError(f"prompts decoded as one batch must have equal token lengths, got lengths {lengths}")
    return [[eos_id, *p] for p in prompts]


class VariantStream(RowStream[Variant, LanguageModelRows]):
    """A language model's stream: N continuations of one prompt (or one prompt per row)."""

    def __init__(
        self,
        model: LanguageModel,
        tokenizer: VariorumTokenizer,
        prompt_ids: Sequence[int],
        n: int,
        settings: DecodeConfig,
        should_stop: Callable[[], bool] | None = None,
        prompts: Sequence[Sequence[int]] | None = None,
        runner: BackboneRunner[Any] | None = None,
        words: WordSpeller | None = None,
    ) -> None:
        """`runner` computes the hidden states (engine/decoding/backbone_runner.py); default: `model` itself.
        `words` spells the allowed words when `settings.real_words` is on (engine/decoding/real_words.py)."""
        refuse_copy_limit(settings, "a language model continues its prompt")
        self.model = model
        self.runner = runner  # the backbone's step (engine/decoding/step.py); None = the torch model
        self.tokenizer = tokenizer
        # One context per row: the shared prompt n times, or each row its own (`prompts`).
        self.row_prompts = _row_prompts(tokenizer.eos_id, prompt_ids, n, prompts)
        # A context longer than the block is cut to its last half-block before anything is counted, so
        # the termination step t counts the window's tokens, as in training (`document_steps` starts
        # each training window at t = 1); counting a 65k-token prompt would start NMST near α = 1/2.
        block = model.config.block_size
        self.prompt_cut = any(len(row) > block for row in self.row_prompts)  # the rows have one length
        if self.prompt_cut:
            self.row_prompts = [row[-(block // 2) :] for row in self.row_prompts]
        super().__init__(model.head, n, settings, should_stop, words)
        self.text_tokens = [0] * n  # per variant: how many of its tokens `text` already shows in full
        # the text each row continues: where its quotation marks stand (engine/decoding/text_cleanup.py)
        self.contexts = [tokenizer.decode(self.row_prompts[0])] * n if prompts is None else [
            tokenizer.decode(row) for row in self.row_prompts]
        self.cleaned = [GeneratedText(context) for context in self.contexts]

    def _new_variant(self, index: int, seed: int) -> Variant:
        return Variant(index=index, seed=seed, settings=self.settings.variant_record(seed),
                       prompt_cut=self.prompt_cut)

    def __iter__(self) -> Iterator[TokenEvent]:
        # the torch step on the CPU: under the thread count measured fastest for this model and batch
        threads = decode_threads(self.model, len(self.row_prompts)) if self.runner is None else nullcontext()
        with eval_mode(self.model), torch.inference_mode(), threads as plan:
            self.step_threads = plan
            yield from self._run()

    def _run(self) -> Iterator[TokenEvent]:
        rows = LanguageModelRows(self.model, self.row_prompts, self.settings.max_new_tokens, self.runner)
        if self.sampler.guided:  # guidance's twin reads no prompt: only the document separator
            self.twin = LanguageModelRows(self.model, [[self.tokenizer.eos_id]] * len(self.row_prompts),
                                          self.settings.max_new_tokens, self.runner)
        self.loops = LoopGuard(len(self.variants))
        partials = self._start_partials()
        capped = yield from self._steps(rows, self.settings.max_new_tokens, partials, self.tokenizer.pad_id)
        if capped is None:
            return
        self._finish(capped, FINISH_LENGTH)
        if self.settings.end_at_sentence:
            cut = [self.variants[self.row_variants[r]] for r in capped.nonzero()[:, 0].tolist()]
            end_at_sentence(cut, self.tokenizer.decode)
            for variant in cut:  # the kept tokens' text, cleaned as it streamed (the rule looks only back)
                if variant.finish_reason == FINISH_SENTENCE:
                    variant.text = GeneratedText(self.contexts[variant.index]).add(variant.text)

    def _allowed(self, last: bool) -> torch.Tensor | None:
        """Real words only (the last step before the cap closes the open words); with `end_at_sentence`, no eos
        for a row whose text so far does not end a sentence (an empty one included)."""
        allowed = None if self.spelled is None else self.spelled.allowed(closing=[last] * len(self.row_variants))
        if not self.settings.end_at_sentence:
            return allowed
        return without_open_ends(allowed, [self.variants[i].text for i in self.row_variants], self.tokenizer.eos_id,
                                 self.model.config.vocab_size, self.model.backbone.token_embedding.weight.device)

    def _history(self, rows: LanguageModelRows) -> torch.Tensor:
        return rows.ids

    def _ended(self, tokens: torch.Tensor, active: torch.Tensor) -> torch.Tensor:
        """eos, or the row's latest tokens are a loop (engine/decoding/loops.py)."""
        ended = tokens == self.tokenizer.eos_id
        looping = torch.tensor(self.loops.add(tokens.tolist()), device=active.device) & active & ~ended
        self._finish(looping, FINISH_LOOP)
        return ended | looping

    def _keep(self, kept: torch.Tensor) -> None:
        super()._keep(kept)
        self.loops.select(kept.tolist())

    def _start_partials(self) -> list[str]:
        """Each row's partial word before its first token: the letters its context ends with."""
        return [trailing_partial(self.tokenizer.decode(prompt)) for prompt in self.row_prompts]

    def _event(self, i: int, token: int, log_prob: float, group: int) -> TokenEvent:
        variant = self.variants[i]
        delta = self._update_text(variant)
        if token == self.tokenizer.eos_id:
            variant.finish_reason = FINISH_EOS
        return TokenEvent(i, token, delta, log_prob, group)

    def _update_text(self, variant: Variant) -> str:
        """Decode the variant's tokens not yet in its text; hold back an incomplete trailing character.

        A variant that ends mid-character (length cap, cancellation) keeps the text up to
        its last complete character, so `text` is always exactly the concatenated deltas, which are
        cleaned as they come (engine/decoding/text_cleanup.py).
        Only the tokens after the text's last complete character are decoded: byte-level BPE
        decodes to the UTF-8 of the tokens' bytes, and bytes that end on a character boundary
        decode the same alone as in front of more bytes, so a step costs the same at token 5
        and at token 500 (decoding every token each step grew with the length).
        """
        shown = self.text_tokens[variant.index]
        delta = self.tokenizer.decode(variant.token_ids[shown:])
        if delta.endswith(INCOMPLETE_CHAR):
            return ""
        delta = self.cleaned[variant.index].add(delta)  # no control characters, quotation marks paired
        variant.text += delta
        self.text_tokens[variant.index] = len(variant.token_ids)
        return delta


def generate_variants(
    model: LanguageModel,
    tokenizer: VariorumTokenizer,
    prompt: str,
    n: int,
    settings: DecodeConfig,
    on_token: Callable[[TokenEvent], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    runner: BackboneRunner[Any] | None = None,
    words: WordSpeller | None = None,
) -> list[Variant]:
    """Generate `n` continuations of `prompt`, calling `on_token` for each streamed token."""
    stream = VariantStream(model, tokenizer, tokenizer.encode(prompt), n, settings, should_stop, runner=runner,
                           words=words)
    for event in stream:
        if on_token is not None:
            on_token(event)
    return stream.variants
