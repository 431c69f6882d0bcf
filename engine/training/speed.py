"""How the training loop makes a step fast and measures it (docs/cpu-training-speed.md).

Fused AdamW on CUDA and the CPU alike (with the weights' version counters kept true after it),
when the loss module is compiled, and the tokens/s a run records in its checkpoints and card.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import torch

from engine.config import TrainConfig
from engine.training.dropout_masks import cpu_decompositions

# `--compile` unset: compile on the CPU for runs of at least this many steps (compiling costs about a
# minute on two cores; a shorter run, a test's, loses more than it gains)
COMPILE_MIN_STEPS = 100
# inductor options of a compiled CPU step: `fallback_random` draws dropout masks with torch's generator
# instead of inductor's per-element random numbers, which cost more here (docs/cpu-training-speed.md)
CPU_COMPILE_OPTIONS: dict[str, str | int | bool | Callable[..., Any]] = {"fallback_random": True}


def build_optimizer(model: torch.nn.Module, config: TrainConfig, fused: bool = True,
                    undecayed: Sequence[str] = ()) -> torch.optim.AdamW:
    """AdamW with weight decay on matrices only (not on biases and layer norms, nor on the parameters named in
    `undecayed`: those of which only some rows train, engine/training/trainable.py); `fused`: one kernel per
    step instead of ~10 ops per parameter tensor (CUDA and CPU; the unfused loop is for comparisons)."""
    params = [p for p in model.parameters() if p.requires_grad]
    kept = {id(model.get_parameter(name)) for name in undecayed}
    decay = [p for p in params if p.dim() >= 2 and id(p) not in kept]
    no_decay = [p for p in params if p.dim() < 2 or id(p) in kept]
    groups = [
        {"params": decay, "weight_decay": config.weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]
    fused = fused and bool(params) and all(p.device.type in ("cpu", "cuda") for p in params)
    return torch.optim.AdamW(groups, lr=config.lr, betas=(config.beta1, config.beta2), fused=fused)


def compile_wanted(setting: bool | None, device_type: str, fixed_shapes: bool, max_steps: int) -> bool:
    """Whether the loss module runs under torch.compile. CUDA: with `--compile`, for fixed-shape families
    (as before). CPU: `--compile` / `--no-compile`, unset = for runs of COMPILE_MIN_STEPS or more, since
    fusing the elementwise ops and dtype casts is most of the gain there (docs/cpu-training-speed.md)."""
    if device_type == "cuda":
        return bool(setting) and fixed_shapes
    return max_steps >= COMPILE_MIN_STEPS if setting is None else setting


def compile_step(module: torch.nn.Module, device_type: str, fixed_shapes: bool) -> torch.nn.Module:
    """`module` under torch.compile: fixed shapes compile once; PermGen's lengths vary, so dynamic shapes
    instead of a compile per length. On the CPU with `CPU_COMPILE_OPTIONS` and dropout masks cut from
    64-bit random integers (engine/training/dropout_masks.py)."""
    dynamic = None if fixed_shapes else True
    if device_type != "cpu":
        return cast(torch.nn.Module, torch.compile(module, dynamic=dynamic))
    return cast(torch.nn.Module, torch.compile(module, dynamic=dynamic, backend=cpu_backend))


def cpu_backend(graph: torch.fx.GraphModule, example_inputs: list[Any]) -> Any:
    """Inductor with `CPU_COMPILE_OPTIONS` and the cheaper dropout masks. AOTAutograd's cache is off for
    it: its key leaves out the decomposition table, so it could hand back a graph compiled with torch's
    own dropout; inductor's own cache, keyed by the decomposed graph, still applies. The table is read
    under the same options, since inductor's table for random ops depends on `fallback_random`."""
    import torch._inductor.config as inductor_config
    from torch._inductor.compile_fx import compile_fx

    with inductor_config.patch(CPU_COMPILE_OPTIONS):
        decompositions = cpu_decompositions()
    with torch._functorch.config.patch(enable_autograd_cache=False):
        return compile_fx(graph, example_inputs, config_patches=CPU_COMPILE_OPTIONS,
                          decompositions=decompositions)


def mark_weights_updated(optimizer: torch.optim.Optimizer) -> None:
    """Bump the version counter of every weight after a fused AdamW step: its kernel writes the weights
    in place without doing so, and caches keyed by version (engine/packed_linear.py's packed weights,
    used by validation on the CPU) would keep the weights of before."""
    if any(group.get("fused") for group in optimizer.param_groups):
        torch.autograd.graph.increment_version([p for group in optimizer.param_groups for p in group["params"]])


@dataclass
class Throughput:
    """Target tokens trained and the seconds their steps took (validation and saving not counted);
    saved in every checkpoint, so a run trained in chunks reports its whole rate."""

    tokens: int = 0
    seconds: float = 0.0

    def add(self, tokens: int, seconds: float) -> float:
        """Count one step; returns its tokens/s."""
        self.tokens += tokens
        self.seconds += seconds
        return tokens / max(seconds, 1e-9)

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / max(self.seconds, 1e-9)
