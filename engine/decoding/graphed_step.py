"""The language model's one-token step replayed from a CUDA graph, on a bf16 copy of the backbone.

On a GPU a step of a model this small is some forty tiny kernels, and launching them from Python
costs more than running them. `GraphedStepRunner` records the step once per request (per cache)
with `torch.cuda.graph` and then replays it: one launch per token. A graph replays fixed shapes
at fixed addresses, so the recorded step is the backbone's fixed-shape form
(`decode(..., position=)` of the GPT-2 and Llama backbones): the new keys/values are written at a position held in a
device tensor, attention reads the cache's whole capacity under a mask, the token ids come in
through one preallocated tensor, and rows are reordered in place. The prompt and the sliding
window's re-encodes (several tokens at once) run eagerly on the same cache.

The weights are a copy in `dtype` (bf16 by default: tensor-core products, half the bytes read; a
Llama's RoPE tables stay float32, `low_precision_copy`); hidden states come back as float32, so the
head, processors and sampler run exactly as they do for the float32 model. `check` compares the
runner with the float32 eager step at load time, so a GPU where recording or bf16 goes wrong decodes
eagerly instead (with a note saying why).

On a CPU nothing is recorded: the fixed-shape step runs eagerly, which is how the tests check
everything here except the recording itself.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch

from engine.backbones import Backbone
from engine.backbones.kv_cache import KVCache

# The load-time check's limit on max |Δ hidden| against float32, as a fraction of max |hidden|: bf16 keeps
# ~3 significant digits, so the shipped models' hidden states differ by ~1% of their scale; a wrong
# position, mask or cache row differs by about the whole scale.
CHECK_TOLERANCE = 0.05


@dataclass
class GraphedCache(KVCache):
    """A `KVCache` plus the recorded step's fixed inputs and output (made at the first one-token step)."""

    step_ids: torch.Tensor | None = None  # [N, 1] the tokens the recorded step reads
    position: torch.Tensor | None = None  # [1] where it writes
    step_out: torch.Tensor | None = None  # [N, 1, D] what it writes, overwritten by every replay
    graph: torch.cuda.CUDAGraph | None = None  # None on the CPU, or until recorded

    def select_rows(self, rows: torch.Tensor) -> None:
        """Reorder in place while the row count stays (the recorded step keeps its addresses); a new
        count gets new buffers and a new recording."""
        if rows.numel() != self.keys.shape[1]:
            super().select_rows(rows)
            self.step_ids = self.position = self.step_out = self.graph = None
            return
        self.keys.copy_(self.keys.index_select(1, rows))
        self.values.copy_(self.values.index_select(1, rows))


def low_precision_copy(backbone: Backbone, dtype: torch.dtype) -> Backbone:
    """A copy of `backbone` with its weights in `dtype` and its float buffers in float32.

    Those buffers are tables made from the config, not weights: a Llama's RoPE cos / sin [block_size, d].
    In bf16 (8 significant bits) every entry would move by up to 2^-9 of its size, at every position, and in
    the slowly turning dimensions cos would round to 1 over long runs of positions, which q·k then cannot
    tell apart there. Kept in float32, the backbone rotates in float32 and rounds the rotated queries and
    keys once (`LlamaBackbone._attend`)."""
    copied = copy.deepcopy(backbone).to(dtype)
    for name, buffer in backbone.named_buffers():
        if buffer.is_floating_point():
            owner, _, attribute = name.rpartition(".")
            setattr(copied.get_submodule(owner), attribute, buffer.clone())  # replaces the registered buffer
    return copied


class GraphedStepRunner:
    """A backbone runner (engine/decoding/backbone_runner.py) over a `dtype` copy of `backbone`."""

    def __init__(self, backbone: Backbone, dtype: torch.dtype = torch.bfloat16) -> None:
        self.backbone = low_precision_copy(backbone, dtype).eval().requires_grad_(False)
        self.dtype = dtype
        self.device = backbone.token_embedding.weight.device
        precision = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32"}.get(dtype, str(dtype))
        self.name = f"torch ({'CUDA graph, ' if self.device.type == 'cuda' else ''}{precision})"

    def new_cache(self, rows: int, positions: int | None = None) -> GraphedCache:
        base = self.backbone.new_cache(rows, positions)
        return GraphedCache(base.keys, base.values, weights=base.weights)

    def decode(self, input_ids: torch.Tensor, cache: GraphedCache) -> torch.Tensor:
        """ids [N, T] → float32 hidden [N, T, D]; one token per row replays the recorded step."""
        if input_ids.shape[1] > 1:
            return self.backbone.decode(input_ids, cache).float()
        if cache.step_ids is None:
            self._record(cache)
        assert cache.step_ids is not None and cache.position is not None
        cache.step_ids.copy_(input_ids)
        cache.position.fill_(cache.length)
        if cache.graph is not None:
            cache.graph.replay()
        else:
            cache.step_out = self._step(cache)
        cache.advance(1)
        assert cache.step_out is not None
        return cache.step_out.to(torch.float32, copy=True)  # the next replay overwrites step_out

    def _step(self, cache: GraphedCache) -> torch.Tensor:
        assert cache.step_ids is not None
        return self.backbone.decode(cache.step_ids, cache, cache.position)  # [N, 1, D]

    def _record(self, cache: GraphedCache) -> None:
        """Make the fixed inputs; on CUDA, record the step into `cache.graph` after a warm-up run."""
        rows = cache.keys.shape[1]
        cache.step_ids = torch.zeros(rows, 1, dtype=torch.long, device=self.device)
        cache.position = torch.full((1,), cache.length, dtype=torch.long, device=self.device)
        if self.device.type != "cuda":
            return
        # Warm-up on a side stream, as recording requires: lazy library setup must not happen while
        # recording. It writes token 0's keys/values at `position`, which the first replay overwrites.
        current = torch.cuda.current_stream(self.device)
        side = torch.cuda.Stream(self.device)  # type: ignore[no-untyped-call]  # torch leaves it untyped
        side.wait_stream(current)
        with torch.cuda.stream(side):
            self._step(cache)
        current.wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            cache.step_out = self._step(cache)
        cache.graph = graph

    @torch.inference_mode()
    def check(self, reference: Backbone) -> float:
        """The largest gap between a short decode (a two-token prompt, then three recorded steps) and the
        float32 eager `reference`, as a fraction of the hidden states' scale; ValueError above `CHECK_TOLERANCE`."""
        ids = torch.arange(5, device=self.device)[None, :] % reference.config.vocab_size  # [1, 5]
        ours_cache, theirs_cache = self.new_cache(1), reference.new_cache(1)
        ours = [self.decode(ids[:, :2], ours_cache)]
        theirs = [reference.decode(ids[:, :2], theirs_cache)]
        for token in range(2, ids.shape[1]):
            ours.append(self.decode(ids[:, token : token + 1], ours_cache))
            theirs.append(reference.decode(ids[:, token : token + 1], theirs_cache))
        expected = torch.cat(theirs, 1)  # [1, 5, D]
        gap = float((torch.cat(ours, 1) - expected).abs().max() / expected.abs().max())
        if not gap <= CHECK_TOLERANCE:  # also catches NaN
            raise ValueError(f"its hidden states differ from float32 by {gap:.1%} of their scale "
                             f"(more than {CHECK_TOLERANCE:.0%})")
        return gap


def graphed_runtime(backbone: Backbone) -> tuple[GraphedStepRunner | None, str]:
    """(the bf16 graphed runner, '') for a backbone on CUDA that passes `check`; else (None, why not)."""
    try:
        runner = GraphedStepRunner(backbone)
        runner.check(backbone)
    except (RuntimeError, ValueError) as error:  # torch reports CUDA and recording failures as RuntimeError
        reason = str(error).splitlines()[0][:200] if str(error) else type(error).__name__
        return None, f"the recorded bf16 step is not used, decoding with eager float32 torch ({reason})"
    return runner, ""
