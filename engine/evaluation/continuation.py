"""The continuation protocol (F² §4.1.5, POSG §5.2): prefixes of P tokens, continuations of C tokens.

Windows: the split's documents are encoded, each preceded by eos (as in training), concatenated
into one stream (F²'s "batchify") and cut into consecutive non-overlapping windows of P + C
tokens: the first P are the prefix, the next C the human reference continuation (eos
separators are removed from references before scoring, since generations stop at eos).

Generation is the app's own decoder, `VariantStream`, one prefix at a time with n = 1 and seed
`seed + window index`: every head, termination rule and decoding control behaves exactly as
in the app, and a window's continuation is reproducible from its seed. (Batching different
prefixes would be ~4× faster on CPU but needs per-row prompts in VariantStream; a copy of its
loop here would drift from it.) p(eos_t) is re-scored afterwards with `model.next_log_probs`
over [eos, prefix, continuation] — the model's own sequence scorer, so termination heads use
their own step convention — for the steps that fit in one block.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

from engine.decoding.generate import FINISH_EOS, VariantStream
from engine.decoding.settings import DecodeConfig
from engine.model import LanguageModel
from engine.tokenizer import VariorumTokenizer


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


@torch.no_grad()
def rescore(model: LanguageModel, prompt: Sequence[int], generated: Sequence[int]) -> torch.Tensor:
    """Marginal log p(· | context) before each generated token that fits in one block → [K, V].

    `prompt` includes the leading eos; row k is the distribution generated[k] was drawn from
    (before decoding processors), K = min(len(generated), block_size − len(prompt) + 1).
    """
    sequence = [*prompt, *generated][: model.config.block_size]
    first = len(prompt) - 1  # position whose output predicts generated[0]
    if not generated or first >= len(sequence):
        return torch.zeros(0, model.config.vocab_size)
    device = next(model.parameters()).device
    log_probs = model.next_log_probs(torch.tensor([sequence], device=device))[0]  # [T, V]
    return log_probs[first : first + len(generated)].float().cpu()


def continue_prefixes(
    model: LanguageModel,
    tokenizer: VariorumTokenizer,
    prefixes: Sequence[Sequence[int]],
    settings: DecodeConfig,
    seed: int = 0,
    on_prefix: Callable[[int], None] | None = None,
) -> list[Continuation]:
    """Continue every prefix with VariantStream (prefix i uses seed `seed + i`)."""
    eos = tokenizer.eos_id
    was_training = model.training
    model.eval()
    results = []
    try:
        for i, prefix in enumerate(prefixes):
            stream = VariantStream(model, tokenizer, list(prefix), 1, settings.with_seed(seed + i))
            for _ in stream:
                pass
            variant = stream.variants[0]
            ended = variant.finish_reason == FINISH_EOS
            tokens = variant.token_ids[:-1] if ended else list(variant.token_ids)
            scores = rescore(model, stream.prompt_ids, variant.token_ids)
            results.append(Continuation(
                token_ids=tokens, length=len(variant.token_ids) if ended else None,
                eos_probs=scores[:, eos].exp().tolist(), groups=variant.token_groups[: len(tokens)],
            ))
            if on_prefix is not None:
                on_prefix(1)
    finally:
        model.train(was_training)
    return results
