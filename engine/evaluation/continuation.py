"""The continuation protocol (F² §4.1.5, POSG §5.2): prefixes of P tokens, continuations of C tokens.

Windows: the split's documents are encoded, each preceded by eos (as in training), concatenated
into one stream (F²'s "batchify") and cut into consecutive non-overlapping windows of P + C
tokens: the first P are the prefix, the next C the human reference continuation (eos
separators are removed from references before scoring, since generations stop at eos).

Generation is the app's own decoder, `VariantStream`, with seed `seed + window index`: every
head, termination rule and decoding control behaves exactly as in the app, and a window's
continuation is reproducible from its seed. Prefixes of equal length (all windows have P
tokens) are decoded `batch_size` at a time as the rows of one stream (`prompts=`), which gives
each row the tokens it would get alone (tests/engine/decoding/test_generate.py checks this).
With `drafts` K > 1 (the app's choosing among drafts, engine/selection) each window is decoded K times
— rows window-major, so draft d of window i has seed `seed + i·K + d` (K = 1: `seed + i` as before) —
and `pick` (the coherence scorer's choice, engine/evaluation/protocols.py) keeps one draft per window;
only the kept one is scored. Batches then hold `batch_size // K` windows.
p(eos_t) is re-scored afterwards with `model.next_log_probs` over [eos, prefix, continuation]
— the model's own sequence scorer, so termination heads use their own step convention — for
the steps that fit in one block, a batch at a time (right-padded: causal attention keeps
padding out of the scored positions).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

from engine.decoding.generate import VariantStream
from engine.decoding.real_words import WordSpeller
from engine.decoding.settings import DecodeConfig
from engine.decoding.stream import FINISH_EOS, Variant
from engine.model import LanguageModel
from engine.tokenizer import VariorumTokenizer
from engine.torch_modes import eval_mode


@dataclass(frozen=True)
class Window:
    """One prefix (P ids) and its human continuation (C ids, eos separators removed)."""

    prefix: list[int]
    reference: list[int]


@dataclass
class Continuation:
    """A generated continuation: ids without eos, |y| (eos step), groups, p(eos_t) per scored step."""

    token_ids: list[int] = field(default_factory=list)
    length: int | None = None  # step at which eos was produced; None = no eos within the cap
    eos_probs: list[float] = field(default_factory=list)
    groups: list[int] = field(default_factory=list)


def make_windows(
    encoded: Sequence[Sequence[int]], eos_id: int, prefix_len: int, continuation_len: int, max_windows: int | None
) -> list[Window]:
    """Cut the eos-separated stream of `encoded` documents into prefix/continuation windows."""
    if prefix_len < 1 or continuation_len < 1:
        raise ValueError(f"prefix and continuation lengths must be >= 1, got {prefix_len}, {continuation_len}")
    stream = [token for doc in encoded for token in (eos_id, *doc)]
    width = prefix_len + continuation_len
    count = len(stream) // width if max_windows is None else min(len(stream) // width, max_windows)
    if count == 0:
        raise ValueError(f"the split has {len(stream)} tokens, fewer than one window of {width}")
    windows = []
    for start in range(0, count * width, width):
        prefix = stream[start : start + prefix_len]
        reference = [t for t in stream[start + prefix_len : start + width] if t != eos_id]
        windows.append(Window(prefix, reference))
    return windows


DEFAULT_BATCH = 32  # prefixes per decoding batch (VariantStream allows up to 64 rows)
DraftPicker = Callable[[Sequence[int], Sequence[Variant]], int]  # (prefix ids, one window's drafts) → the kept one


def _scored(model: LanguageModel, prompt: Sequence[int], generated: Sequence[int]) -> tuple[list[int], int, int]:
    """(the ids to score, first position to read, rows to read) for one continuation."""
    sequence = [*prompt, *generated][: model.config.block_size]
    first = len(prompt) - 1  # position whose output predicts generated[0]
    rows = max(0, min(len(generated), len(sequence) - first)) if first < len(sequence) else 0
    return sequence, first, rows


@torch.no_grad()
def rescore_batch(
    model: LanguageModel, prompts: Sequence[Sequence[int]], generated: Sequence[Sequence[int]], pad_id: int
) -> list[torch.Tensor]:
    """`rescore` for many continuations with one right-padded forward pass → one [K_i, V] each."""
    parts = [_scored(model, p, g) for p, g in zip(prompts, generated, strict=True)]
    width = max(len(sequence) for sequence, _, _ in parts)
    device = next(model.parameters()).device
    ids = torch.tensor([seq + [pad_id] * (width - len(seq)) for seq, _, _ in parts], device=device)  # [B, T]
    log_probs = model.next_log_probs(ids).float().cpu()  # [B, T, V]; padding only follows the read rows
    return [log_probs[i, first : first + rows] for i, (_, first, rows) in enumerate(parts)]


def rescore(model: LanguageModel, prompt: Sequence[int], generated: Sequence[int]) -> torch.Tensor:
    """Marginal log p(· | context) before each generated token that fits in one block → [K, V].

    `prompt` includes the leading eos; row k is the distribution generated[k] was drawn from
    (before decoding processors), K = min(len(generated), block_size − len(prompt) + 1).
    """
    if not generated or len(prompt) - 1 >= model.config.block_size:
        return torch.zeros(0, model.config.vocab_size)
    return rescore_batch(model, [prompt], [generated], 0)[0]


def _batches(prefixes: Sequence[Sequence[int]], size: int) -> list[list[int]]:
    """Runs of consecutive indices with equal prefix length, at most `size` each."""
    if not 1 <= size <= 64:
        raise ValueError(f"batch size must be in [1, 64], got {size}")
    chunks: list[list[int]] = []
    for i, prefix in enumerate(prefixes):
        last = chunks[-1] if chunks else []
        if last and len(last) < size and len(prefixes[last[0]]) == len(prefix):
            last.append(i)
        else:
            chunks.append([i])
    return chunks


def _continuation(variant: Variant, scores: torch.Tensor, eos: int) -> Continuation:
    ended = variant.finish_reason == FINISH_EOS
    tokens = variant.token_ids[:-1] if ended else list(variant.token_ids)
    return Continuation(token_ids=tokens, length=len(variant.token_ids) if ended else None,
                        eos_probs=scores[:, eos].exp().tolist(), groups=variant.token_groups[: len(tokens)])


def _kept_rows(prefixes: Sequence[Sequence[int]], variants: Sequence[Variant], drafts: int,
               pick: DraftPicker | None) -> list[int]:
    """The stream row kept for each of `prefixes`, whose drafts are rows w·K … w·K + K − 1."""
    if drafts == 1:
        return list(range(len(prefixes)))
    if pick is None:
        raise ValueError(f"drafts={drafts} needs a way to choose among a window's drafts")
    return [w * drafts + pick(prefix, variants[w * drafts : (w + 1) * drafts]) for w, prefix in enumerate(prefixes)]


def continue_prefixes(
    model: LanguageModel,
    tokenizer: VariorumTokenizer,
    prefixes: Sequence[Sequence[int]],
    settings: DecodeConfig,
    seed: int = 0,
    on_prefix: Callable[[int], None] | None = None,
    batch_size: int = DEFAULT_BATCH,
    words: WordSpeller | None = None,
    pick: DraftPicker | None = None,
) -> list[Continuation]:
    """Continue every prefix with VariantStream (prefix i uses seed `seed + i`), in batches; `words`: the real
    words when `settings.real_words` is on (engine/decoding/real_words.py); `pick`: which of a window's
    `settings.drafts` drafts it keeps (needed when drafts > 1)."""
    drafts = settings.drafts
    results: dict[int, Continuation] = {}
    with eval_mode(model):
        for chunk in _batches(prefixes, max(1, batch_size // drafts)):
            # Row w·K + d of the stream has seed (seed + chunk[0]·K) + w·K + d = seed + chunk[w]·K + d:
            # chunks are consecutive.
            rows = [list(prefixes[i]) for i in chunk for _ in range(drafts)]
            stream = VariantStream(model, tokenizer, [], len(rows), settings.with_seed(seed + chunk[0] * drafts),
                                   prompts=rows, words=words)
            for _ in stream:
                pass
            kept = _kept_rows([prefixes[i] for i in chunk], stream.variants, drafts, pick)
            variants = [stream.variants[row] for row in kept]
            scores = rescore_batch(model, [stream.row_prompts[row] for row in kept], [v.token_ids for v in variants],
                                   tokenizer.pad_id)
            for i, variant, score in zip(chunk, variants, scores, strict=True):
                results[i] = _continuation(variant, score, tokenizer.eos_id)
            if on_prefix is not None:
                on_prefix(len(chunk))
    return [results[i] for i in range(len(prefixes))]
