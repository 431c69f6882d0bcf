"""PermGen decoding speed on an imported BART: ours vs `BartForConditionalGeneration.generate()`, same weights.

Used by engine/benchmarks/pretrained_shapes.py (the BART-base shape). Both sides encode the same
source (the story source of a title, as the app writes it) and sample N variants × T new tokens as
one batch with a KV cache and the same top-p; transformers reads the checkpoint folder itself, and
the bundle is that checkpoint imported (`variorum import`), so both compute the same distribution.
Ours is the app's path (`Engine.load(...).stream`, torch runtime): sentence-based decoding,
stopped once the N variants (in lock-step) have written N × T tokens between them (a sentence mark
counts, as it costs a step), which on random weights is one long sentence each (⟨E-t⟩ is as
unlikely as any token). Runs
alternate after a warm-up (engine/benchmarks/alternating.py); the medians are tokens/s.
"""

from __future__ import annotations

import functools
import logging
import statistics
import time
from pathlib import Path
from typing import Any, Protocol, cast

import torch
from transformers import BartForConditionalGeneration

from engine.benchmarks.alternating import alternating_medians
from engine.checkpoints.inspect import inspect_checkpoint
from engine.checkpoints.vocabulary import import_vocabulary
from engine.front_door import DecodeConfig, Engine, GenerationRequest, LoadedModel
from engine.permgen.loaded import PermGenLoadedModel

TITLE = "Tom wanted to learn to play the guitar"


class _Generates(Protocol):
    """The one call made on transformers' model (its `generate` annotations vary between releases)."""

    def generate(self, input_ids: torch.Tensor, **kwargs: Any) -> torch.Tensor: ...


def _request(n: int, new_tokens: int, seed: int) -> GenerationRequest:
    settings = DecodeConfig(max_new_tokens=new_tokens, top_p=0.9, seed=seed, real_words=False)
    return GenerationRequest(task="story", title=TITLE, n=n, decode=settings)


def time_ours(model: LoadedModel, n: int, new_tokens: int, seed: int) -> tuple[float, int]:
    """Seconds and tokens of N variants, stopped when they have written N × T tokens together."""
    written = 0
    start = time.perf_counter()
    stream = model.stream(_request(n, new_tokens, seed), should_stop=lambda: written >= n * new_tokens)
    for _ in stream:
        written += 1
    return time.perf_counter() - start, written


def first_text_seconds(model: LoadedModel, rounds: int) -> float:
    """Median seconds from the request to the first text of one variant (its first word, after its mark)."""
    times = []
    for seed in range(rounds + 1):  # the first run warms up
        start = time.perf_counter()
        stream = model.stream(_request(1, 8, seed))
        next(event for event in stream if event.text_delta)  # the rest of the stream is left unread
        times.append(time.perf_counter() - start)
    return statistics.median(times[1:])


def hf_source(model: PermGenLoadedModel, checkpoint: Path) -> torch.Tensor:
    """Our source ids of `TITLE` in the checkpoint's own numbering [1, S]."""
    rows = import_vocabulary(inspect_checkpoint(checkpoint)).source_rows  # new id → checkpoint row
    ours = model.permgen.tokenizer.encode(model.source_text(_request(1, 1, 0)))
    return torch.tensor([[rows[i] for i in ours]])


def time_hf(bart: BartForConditionalGeneration, source: torch.Tensor, n: int, new_tokens: int,
            seed: int) -> tuple[float, int]:
    """Seconds and new tokens of `generate()` sampling N variants of T tokens (eos may end one early)."""
    ids = source.expand(n, -1)  # [N, S]
    config: Any = bart.config
    torch.manual_seed(seed)
    start = time.perf_counter()
    with torch.inference_mode():
        out = cast(_Generates, bart).generate(
            ids, attention_mask=torch.ones_like(ids), do_sample=True, top_p=0.9, top_k=0, max_new_tokens=new_tokens,
            decoder_start_token_id=config.decoder_start_token_id, eos_token_id=config.eos_token_id,
            pad_token_id=config.pad_token_id, forced_bos_token_id=None, forced_eos_token_id=None,
        )
    elapsed = time.perf_counter() - start
    new = out[:, 1:]  # [N, ≤T] after the decoder start token; pad after a variant's eos
    return elapsed, int((new != config.pad_token_id).sum())


def compare(bundle: Path, checkpoint: Path, shapes: list[tuple[int, int]], rounds: int) -> None:
    """Print first-text latency and, per shape, ours / HF tokens/s and their ratio."""
    logging.getLogger("transformers").setLevel(logging.ERROR)
    model = Engine([bundle.parent]).load(bundle, device="cpu", runtime="torch")
    if not isinstance(model, PermGenLoadedModel):
        raise SystemExit(f"{bundle} is not a PermGen bundle")
    bart = BartForConditionalGeneration.from_pretrained(str(checkpoint), local_files_only=True).eval()
    source = hf_source(model, checkpoint)
    print(f"first text (1 variant, title {TITLE!r}): {first_text_seconds(model, rounds + 2) * 1000:.0f} ms")
    print(f"{'variants × tokens':>18} {'ours tok/s':>11} {'HF tok/s':>9} {'ours/HF':>8}")
    for n, new_tokens in shapes:
        ours, theirs = alternating_medians([functools.partial(time_ours, model, n, new_tokens),
                                            functools.partial(time_hf, bart, source, n, new_tokens)], rounds)
        print(f"{f'{n} × {new_tokens}':>18} {ours:11.1f} {theirs:9.1f} {ours / theirs:8.2f}")
