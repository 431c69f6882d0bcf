"""Paraphrase a passage sentence by sentence with a paraphrase bundle (task "paraphrase").

The passage is split into sentences (engine/paraphrase/passage.py). For sentence j the model writes
N alternatives from the normalised sentence (engine/data/text.py), each one marked sentence
⟨B-1⟩ … ⟨E-1⟩ ⟨EOP⟩ (engine/permgen/config.py):

- sampling / greedy: `PermGenStream` with one sentence, so a POSG (or F²) head samples its two
  stages (group, then token; `pos_top_k`, `pos_bias` apply) and a softmax head the usual way;
  candidate i of sentence j uses seed (seed_i + j·1,000,003), so variant i alone (n = 1, its seed)
  is written again identically; guided (engine/decoding/guidance.py), its twin rows read the source of
  no sentence (the instruction alone, for a model that reads one), so the rewrite leans on the words this
  sentence makes likely (measured in docs/guidance.md: more drafts pass a meaning floor);
- beam (`beam_width` > 1): the N best finished hypotheses of one beam of width max(beam_width, N)
  (the sentence beam of engine/permgen/beam_decode.py).

With a meaning floor (a prose model on the pretrained base; engine/permgen/meaning_floor.py) the model
writes `drafts_per_variant` × N alternatives of a sentence, whole, before any is shown, and the floor chooses
what the N variants show: the alternatives that keep the meaning, then rewordings of the sentence, then the
sentence. While it keeps fewer than N different alternatives, the model writes another round of as many (the
floor's `rounds` at most; sampling only, with the round's own seed): where the first round copied the sentence
or dropped a clause, a writer who asked for three rewrites was otherwise shown the sentence itself.

Variant i is the passage with every sentence j replaced by alternative (j, i), in the passage's
own layout. Its tokens and log-probs are the words only (the forced marks are left out). Each
alternative reports, against its source sentence, Self-BLEU (sacrebleu BLEU-4 of the alternative
with the source as reference, in [0, 1], lower = further from the source) and Self-WER (word error
rate, higher = more rewritten), engine/metrics/paraphrase.py — on the normalised word tokens the
model reads and writes, so casing and punctuation spacing do not count as changes. The variant's
`settings` carries them for the app: `self_bleu` / `self_wer` for the whole variant (corpus BLEU
over its sentences, mean WER) and `sentence_self_bleu` / `sentence_self_wer` per sentence.

A sentence whose alternative came out empty keeps its source text (`kept_source`), and so do the
sentences not yet written when the writer stops (finish reason "cancelled").
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from typing import Any

import torch

from engine.data.text import normalize
from engine.decode_fields import BEAM_WIDTH
from engine.decoding.beam import Hypothesis
from engine.decoding.copy_limit import CopyLimit
from engine.decoding.real_words import WordSpeller
from engine.decoding.settings import DecodeConfig
from engine.decoding.stream import FINISH_CANCELLED, BatchStream, TokenEvent
from engine.decoding.text_cleanup import drop_control_characters
from engine.paraphrase.passage import paraphrase_spans, separators
from engine.paraphrase.variants import FINISH_DONE, SENTENCE_SEED_STRIDE, ParaphraseVariant, complete_paraphrases
from engine.permgen.beam_decode import refuse_guided_beam, sentence_beam
from engine.permgen.content_words import paraphrase_source
from engine.permgen.control import OrderControl
from engine.permgen.decode import FIRST_WORD_ID, PermGenStream
from engine.permgen.marks import begin_id
from engine.permgen.meaning_floor import MeaningFloor
from engine.permgen.model import START_ID
from engine.permgen.network import PermGenNetwork
from engine.permgen.rows import PermGenRunner, open_rows
from engine.permgen.sentence_ends import sentence_ends
from engine.permgen.text import ProseForm, encode_sources
from engine.rewording.search import ScoredText
from engine.tokenizer import VariorumTokenizer
from engine.torch_modes import eval_mode

ONE_SENTENCE = OrderControl(num_sentences=1, order=(1,))
ROUND_SEED_STRIDE = 7_000_003  # a later round of a sentence's drafts: a seed no sentence's first round uses


class ParaphraseStream(BatchStream[ParaphraseVariant]):
    """Iterate for `TokenEvent`s (words only); when it ends, `variants` holds N `ParaphraseVariant`s."""

    def __init__(
        self,
        model: PermGenNetwork[Any],
        tokenizer: VariorumTokenizer,
        passage: str,
        n: int,
        settings: DecodeConfig,
        beam_width: int = 1,
        should_stop: Callable[[], bool] | None = None,
        runner: PermGenRunner | None = None,
        words: WordSpeller | None = None,
        prose: ProseForm | None = None,
        floor: MeaningFloor | None = None,
        unconditioned_ids: list[int] | None = None,
    ) -> None:
        """`runner` runs the backbone (engine/permgen/rows.py `PermGenRunner`); None: the torch model. `words`: the real
        words under `settings.real_words` (engine/decoding/real_words.py). `prose`: a prose model's text form
        (engine/permgen/text.py). `floor`: which alternatives keep enough of the meaning, and the rewordings that
        replace the others (engine/permgen/meaning_floor.py). `unconditioned_ids`: the source of no sentence, which
        guidance's twin rows read (engine/decoding/guidance.py)."""
        if model.config.task != "paraphrase":
            raise ValueError(f"this model writes a {model.config.task!r}, not paraphrases")
        BEAM_WIDTH.check(beam_width)
        if beam_width > 1:
            refuse_guided_beam(settings)
        self.unconditioned_ids = unconditioned_ids
        self.spans = paraphrase_spans(passage)
        self.seq2seq, self.tokenizer, self.passage = model, tokenizer, passage
        self.beam_width, self.runner, self.floor = beam_width, runner, floor
        super().__init__(model.head, n, settings, should_stop, words)  # its sampler writes every sentence
        self.sources = [passage[a:b] for a, b in self.spans]
        config = model.config
        texts = [paraphrase_source(s, config.paraphrase_source, config.lowercase) if prose is None
                 else prose.source(s, ()) for s in self.sources]
        self.sources_ids = [ids or [START_ID] for ids in encode_sources(tokenizer, texts, config.max_source_len,
                                                                        prose)[0]]
        # what the copy limit counts: the sentence as the model would write it (a prose source holds more)
        self.copied_ids = self.sources_ids if prose is None else tokenizer.encode_batch(
            [prose.sentence(normalize(s, config.lowercase)) for s in self.sources])
        self.cap = min(model.config.max_sentence_len - 2, settings.max_new_tokens)
        self.outputs: list[list[str]] = []  # per finished sentence, the N model outputs

    def _new_variant(self, index: int, seed: int) -> ParaphraseVariant:
        recorded: dict[str, object] = self.settings.variant_record(seed)
        if self.beam_width > 1:
            recorded["beam_width"] = self.beam_width
        return ParaphraseVariant(index=index, seed=seed, settings=recorded)

    def __iter__(self) -> Iterator[TokenEvent]:
        try:
            for j, prefix in enumerate(separators(self.passage, self.spans)):
                outputs = yield from self._sentence(j, prefix)
                if outputs is None:
                    for variant in self.candidates:
                        variant.finish_reason = FINISH_CANCELLED
                    return
                self.outputs.append(outputs)
            for variant in self.candidates:
                variant.finish_reason = FINISH_DONE
        finally:
            self._complete()

    def _sentence(self, j: int, prefix: str) -> Generator[TokenEvent, None, list[str] | None]:
        """Stream sentence j's N alternatives; return their model texts (None when cancelled). Sampled ones
        stream as they are written, unless a meaning floor must see them all first."""
        if self.beam_width == 1 and self.floor is None:
            return (yield from self._streamed(j, prefix))
        n = len(self.candidates)
        count = n * (self.floor.drafts_per_variant if self.floor is not None else 1)
        drafts = self._beam_drafts(j, count) if self.beam_width > 1 else self._floored_drafts(j, count)
        if drafts is None:
            return None
        chosen: list[ScoredText | None] = list(drafts)
        if self.floor is not None:
            chosen = self.floor.choose(self.sources[j], drafts, self._seed(j), n)
        for i, pick in enumerate(chosen):
            if pick is not None:
                yield from self._emit_words(i, j, prefix, pick)
        return [pick.text if pick is not None else "" for pick in chosen]

    def _seed(self, j: int, round_index: int = 0) -> int:
        return (self.base_seed + j * SENTENCE_SEED_STRIDE + round_index * ROUND_SEED_STRIDE) % 2**62

    def _inner(self, j: int, count: int, round_index: int = 0) -> PermGenStream:
        """The one-sentence stream that samples `count` alternatives of sentence j (its round of drafts)."""
        return PermGenStream(self.seq2seq, self.tokenizer, self.sources_ids[j], count,
                             self.settings.with_seed(self._seed(j, round_index)), ONE_SENTENCE, self.should_stop,
                             self.runner, self.words, self._copy_limit(j), self.sampler,
                             unconditioned_ids=self.unconditioned_ids)

    def _floored_drafts(self, j: int, count: int) -> list[ScoredText] | None:
        """Sentence j's sampled drafts, `count` a round: with a meaning floor, rounds go on (to its `rounds`) while it
        keeps fewer different drafts than the N variants need; one round when greedy, whose rounds all agree."""
        rounds = 1 if self.floor is None or self.settings.greedy else self.floor.rounds
        drafts: list[ScoredText] = []
        for round_index in range(rounds):
            written = self._sampled_drafts(j, count, round_index)
            if written is None:
                return None
            drafts += written
            if self.floor is None or self.floor.different_kept(self.sources[j], drafts) >= len(self.candidates):
                break
        return drafts

    def _streamed(self, j: int, prefix: str) -> Generator[TokenEvent, None, list[str] | None]:
        inner = self._inner(j, len(self.candidates))
        started = [False] * len(self.candidates)
        for event in inner:
            if event.token_id < FIRST_WORD_ID:
                continue  # the forced marks
            yield self._take(event, j, prefix if not started[event.variant] else "")
            started[event.variant] = True
        if any(v.finish_reason == FINISH_CANCELLED for v in inner.candidates):
            return None
        return [v.sentences.get(1, "") for v in inner.candidates]

    def _sampled_drafts(self, j: int, count: int, round_index: int = 0) -> list[ScoredText] | None:
        """`count` sampled alternatives of sentence j, written whole before any is shown (None when cancelled)."""
        inner = self._inner(j, count, round_index)
        for _ in inner:
            pass
        if any(v.finish_reason == FINISH_CANCELLED for v in inner.candidates):
            return None
        return [self._draft(v.sentences.get(1, ""), v.token_ids, v.token_log_probs) for v in inner.candidates]

    def _beam_drafts(self, j: int, count: int) -> list[ScoredText] | None:
        """The `count` best of sentence j's beam, repeated in turn when it found fewer (None when cancelled)."""
        found = self._beam(j, count)
        if found is None:
            return None
        picks = [found[i % len(found)] for i in range(count)]
        return [self._draft(drop_control_characters(self.tokenizer.decode([t for t in h.tokens if t >= FIRST_WORD_ID]))
                            .strip(), h.tokens, h.log_probs) for h in picks]

    @staticmethod
    def _draft(text: str, tokens: list[int], log_probs: list[float]) -> ScoredText:
        """An alternative's text with its words' tokens and log-probs (the marks left out)."""
        words = [(t, lp) for t, lp in zip(tokens, log_probs, strict=True) if t >= FIRST_WORD_ID]
        return ScoredText(text, [t for t, _ in words], [lp for _, lp in words])

    def _copy_limit(self, j: int) -> CopyLimit | None:
        """Sentence j's copy limit (`settings.copy_limit` tokens of its source), None when off."""
        limit = self.settings.copy_limit
        return CopyLimit(self.copied_ids[j], limit) if limit else None

    def _beam(self, j: int, count: int) -> list[Hypothesis] | None:
        source_ids = self.sources_ids[j]
        model = self.seq2seq
        with eval_mode(model), torch.inference_mode():
            rows = open_rows(model, source_ids, 1, self.runner, self.cap + 3)  # cut to the model's limit
            rows.advance(torch.tensor([begin_id(1)], device=rows.hidden.device))
            width = max(self.beam_width, count)
            ends = sentence_ends(self.tokenizer) if model.config.text_form == "prose" else None
            return sentence_beam(rows, 1, width, self.cap, self.should_stop, self.words, self._copy_limit(j), ends)

    def _emit_words(self, i: int, j: int, prefix: str, pick: ScoredText) -> Iterator[TokenEvent]:
        """Variant i's chosen alternative of sentence j, token by token after the passage's separator `prefix` (a
        rewording's end-of-text log-prob left out)."""
        for k, (token, log_prob) in enumerate(zip(pick.token_ids, pick.log_probs, strict=False)):
            delta = drop_control_characters(self.tokenizer.decode([token]))
            delta = delta if k else prefix + delta.lstrip()  # a prose model's sentence starts with a space
            yield self._take(TokenEvent(i, token, delta, log_prob, 0), j, "")

    def _take(self, event: TokenEvent, j: int, prefix: str) -> TokenEvent:
        """Record candidate `event.variant`'s token of passage sentence j (the event names sentence j + 1)."""
        self.candidates[event.variant].add(event.token_id, event.log_prob, event.group)
        return TokenEvent(event.variant, event.token_id, prefix + event.text_delta, event.log_prob, event.group, j + 1)

    def _complete(self) -> None:
        complete_paraphrases(self.candidates, self.passage, self.spans, self.outputs, self.seq2seq.config.lowercase)
