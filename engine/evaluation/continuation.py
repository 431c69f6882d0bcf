"""The continuation protocol (F² §4.1.5, POSG §5.2): prefixes of P tokens, continuations of C tokens.

Windows: the split's documents are encoded, each preceded by eos (as in training), concatenated
into one stream (F²'s "batchify") and cut into consecutive non-overlapping windows of P + C
tokens: the first P are the prefix, the next C the human reference continuation (eos
separators are removed from references before scoring, since generations stop at eos).

Generation: every prefix has the same length, so many prefixes run as one batch without
padding. The loop is `VariantStream`'s (same two-stage sampling, same processors, same
`_sample`, same sliding window past the block size), but each row has its own prompt and its
own generator seeded `seed + window index` — so a window's continuation is reproducible from
its seed whatever the batch, and equals `VariantStream(prompt, n=1, seed)` (tested).
`VariantStream` itself batches N variants of *one* prompt, which is why it is not reused here.
Each step also records p(eos_t) from the head's marginal log-probs, for the p(eos) curves.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
from transformers.cache_utils import Cache

from engine.decoding.generate import _sample  # the exact sampler VariantStream uses
from engine.decoding.processors import apply_processors
from engine.decoding.settings import DecodeConfig
from engine.model import LanguageModel


@dataclass(frozen=True)
class Window:
    """One prefix (P ids) and its human continuation (C ids, eos separators removed)."""

    prefix: list[int]
    reference: list[int]


@dataclass
class Continuation:
    """A generated continuation: ids without eos, |y| (eos step) and p(eos) at every step."""

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


class _Batch:
    """Decoding state of one batch of equal-length prompts (mirrors VariantStream._run)."""

    def __init__(self, model: LanguageModel, prompts: list[list[int]], seeds: list[int], eos_id: int) -> None:
        self.model = model
        self.eos_id = eos_id
        device = next(model.parameters()).device
        self.generators = [torch.Generator(device=device).manual_seed(s) for s in seeds]
        self.ids = torch.tensor(prompts, device=device)  # [N, P]
        self.hidden, self.past = self._encode(self.ids)
        self.results = [Continuation() for _ in prompts]

    def _encode(self, ids: torch.Tensor) -> tuple[torch.Tensor, Cache | None]:
        block = self.model.config.block_size
        if ids.shape[1] > block:
            ids = ids[:, -(block // 2) :]
        hidden, past = self.model.hidden_states(ids, use_cache=True)
        return hidden[:, -1], past

    def advance(self, tokens: torch.Tensor) -> None:
        self.ids = torch.cat([self.ids, tokens[:, None]], dim=1)
        if self.past is not None and self.past.get_seq_length() < self.model.config.block_size:
            out, self.past = self.model.hidden_states(tokens[:, None], past=self.past, use_cache=True)
            self.hidden = out[:, -1]
        else:
            self.hidden, self.past = self._encode(self.ids)


@torch.inference_mode()
def _run_batch(model: LanguageModel, batch: _Batch, settings: DecodeConfig) -> list[Continuation]:
    head = model.head
    n = len(batch.results)
    device = batch.ids.device
    active = torch.ones(n, dtype=torch.bool, device=device)
    processors, group_processors = settings.processors(), settings.group_processors()
    for step in range(1, settings.max_new_tokens + 1):
        steps = torch.full((n,), step, device=device)
        groups = torch.zeros(n, dtype=torch.long, device=device)
        if head.num_groups > 1:
            group_scores = apply_processors(group_processors, batch.ids, head.group_log_probs(batch.hidden, steps))
            groups = _sample(group_scores, batch.generators, settings.greedy)
        in_group = head.token_log_probs_in_group(batch.hidden, groups, steps)  # [N, V]
        tokens = _sample(apply_processors(processors, batch.ids, in_group), batch.generators, settings.greedy)
        marginal = in_group if head.num_groups == 1 else head.log_probs(batch.hidden, steps)
        eos_probs = marginal[:, batch.eos_id].exp().tolist()
        for i in active.nonzero()[:, 0].tolist():
            result = batch.results[i]
            result.eos_probs.append(float(eos_probs[i]))
            if int(tokens[i]) == batch.eos_id:
                result.length = step
            else:
                result.token_ids.append(int(tokens[i]))
                result.groups.append(int(groups[i]))
        active &= tokens != batch.eos_id
        if not bool(active.any()):
            break
        batch.advance(tokens)
    return batch.results


def continue_prefixes(
    model: LanguageModel,
    prefixes: Sequence[Sequence[int]],
    settings: DecodeConfig,
    eos_id: int,
    seed: int = 0,
    batch_size: int = 32,
    on_batch: Callable[[int], None] | None = None,
) -> list[Continuation]:
    """Continue every prefix (all the same length); prefix i is decoded with seed `seed + i`.

    As in the app, the context starts with eos; `on_batch(k)` reports k finished prefixes.
    """
    if not prefixes:
        return []
    if len({len(p) for p in prefixes}) != 1:
        raise ValueError("all prefixes must have the same length (windows guarantee it)")
    was_training = model.training
    model.eval()
    results: list[Continuation] = []
    try:
        for start in range(0, len(prefixes), batch_size):
            chunk = [[eos_id, *p] for p in prefixes[start : start + batch_size]]
            seeds = [seed + start + i for i in range(len(chunk))]
            results.extend(_run_batch(model, _Batch(model, chunk, seeds, eos_id), settings))
            if on_batch is not None:
                on_batch(len(chunk))
    finally:
        model.train(was_training)
    return results
