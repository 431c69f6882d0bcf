"""What a fine-tune trains: all weights, the head, the last N blocks, or LoRA adapters (TrainConfig `trainable`).

A pretrained backbone (a writer's GPT-2, engine/checkpoints) already writes fluent text; a new head
(F² classes, POS groups, NMST's eos group) can be learned on top of it at a fraction of the cost.
Each setting freezes the rest (`requires_grad = False`, so AdamW holds no moments for it):

- "all": every weight;
- "head": the output head's own parameters (a tied token embedding belongs to the backbone and
  stays frozen): F²'s class layer, POSG's group layer, the termination's eos layer;
- "last-N": the head, the last N blocks of the stack nearest the output and what follows them
  (the final layer norm);
- "lora": the head, and low-rank adapters on every linear projection of every block (Hu et al.,
  2021: W x + (α / r) B A x with A [r, in] random, B [out, r] zero, so training starts at the
  pretrained model). The adapters come from `peft` (`inject_adapter_in_model`). Before the model
  is used or saved they are merged into the weights (`merge_lora`), so decoding, ONNX export and
  the bundle see a plain model; the bundle stores the factors (engine/bundles/base.py), a few MB
  instead of the adapted matrices.

A model says where its blocks are by `BundledModel.block_stack()`, and which rows of a parameter are new to
its start (`BundledModel.trained_rows()`: the rows of tokens a pretrained vocabulary gained, PermGen's
sentence marks): in every setting but "all" those rows train and the rest of the parameter stays as it
was, bit for bit. A gradient hook zeroes the other rows' gradient, and the parameter gets no weight decay
(`row_trained`; AdamW's decay would move every row), so a bundle on the base stores the trained rows
only (engine/bundles/base.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from engine.bundled_model import BundledModel
from engine.config import ConfigError, TrainConfig
from engine.low_rank_adapters import lora_factors

LowRank = dict[str, tuple[torch.Tensor, torch.Tensor]]  # weight name → (U [rows, r], V [r, cols]); W += U V


def _projections(model: nn.Module, blocks: list[nn.Module]) -> tuple[list[str], bool]:
    """Full names of the linear projections (nn.Linear, transformers' Conv1D) inside `blocks`, and whether
    they are all Conv1D (weights stored [in, out], peft's `fan_in_fan_out`)."""
    from transformers.pytorch_utils import Conv1D

    inside = {id(m) for block in blocks for m in block.modules()}
    found = [(name, m) for name, m in model.named_modules() if id(m) in inside and isinstance(m, nn.Linear | Conv1D)]
    return [name for name, _ in found], all(isinstance(m, Conv1D) for _, m in found)


@dataclass
class TrainableParts:
    """The parameters a run trains, and the LoRA adapters it injected (to merge before saving)."""

    setting: str
    trained: int  # parameters that get gradients
    total: int
    lora_targets: list[str] = field(default_factory=list)
    row_trained: list[str] = field(default_factory=list)  # parameters of which only some rows train: no decay

    def describe(self) -> str:
        return f"trains {self.trained:,} of {self.total:,} parameters ({self.setting})"


def select_trainable(model: BundledModel, config: TrainConfig, fresh: tuple[str, ...] = ()) -> TrainableParts:
    """Freeze everything `config.trainable` does not train (and inject LoRA adapters for "lora"). Parameters
    whose names start with one of `fresh` are new in this run (not in its start) and train in every setting."""
    total = model.num_parameters()
    setting = config.trainable
    if setting == "all":
        return TrainableParts(setting, total, total)
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    for name, parameter in model.named_parameters():  # tied weights are listed under their first (backbone) name
        if name.startswith(("head.", *fresh)):
            parameter.requires_grad_(True)
    targets: list[str] = []
    if setting.startswith("last-"):
        blocks, after = model.block_stack()
        count = int(setting.removeprefix("last-"))
        if count > len(blocks):
            raise ConfigError(f"trainable {setting}: the model has only {len(blocks)} blocks")
        for module in [*blocks[-count:], *after]:
            module.requires_grad_(True)
    elif setting == "lora":
        targets = _inject_lora(model, config)
    rows = {name: ids for name, ids in model.trained_rows().items() if not model.get_parameter(name).requires_grad}
    for name, ids in rows.items():
        _train_rows(model.get_parameter(name), ids)
    row_sizes = {id(model.get_parameter(name)): len(ids) * model.get_parameter(name)[0].numel()
                 for name, ids in rows.items()}
    trained = sum(row_sizes.get(id(p), p.numel()) for p in model.parameters() if p.requires_grad)
    if not trained:
        raise ConfigError(f"trainable {setting}: this model's head has no weights of its own (a softmax tied to "
                          "the embedding); train a new head (--head f2 / posg, --termination nmst) or more of it")
    return TrainableParts(setting, trained, total, targets, list(rows))


def _train_rows(parameter: nn.Parameter, rows: list[int]) -> None:
    """Let `parameter` train on its `rows` only: its gradient [R, ...] keeps those rows and is zero elsewhere."""
    index = torch.tensor(rows, dtype=torch.long)

    def keep_rows(grad: torch.Tensor) -> torch.Tensor:
        kept = torch.zeros_like(grad)
        at = index.to(grad.device)
        kept[at] = grad[at]
        return kept

    parameter.requires_grad_(True)
    parameter.register_hook(keep_rows)  # type: ignore[no-untyped-call]  # torch leaves it untyped


def _inject_lora(model: BundledModel, config: TrainConfig) -> list[str]:
    try:
        from peft import LoraConfig, inject_adapter_in_model
    except ImportError:
        raise ConfigError("trainable lora needs the peft package: install Variorum with its finetune extra "
                          "(.ci/setup-venv finetune)") from None
    blocks, _ = model.block_stack()
    targets, conv1d = _projections(model, blocks)
    # A rank above a projection's smaller side adds no freedom, only memory (factors of rank × side each):
    # refused before peft allocates them, as is a number too large to allocate at all
    largest = min((min(model.get_parameter(f"{name}.weight").shape) for name in targets), default=0)
    if config.lora_rank > largest:
        raise ConfigError(f"lora_rank {config.lora_rank:,} is larger than this model's projections allow (at most "
                          f"{largest:,}, the smaller side of its smallest projection)")
    lora = LoraConfig(r=config.lora_rank, lora_alpha=config.lora_alpha, lora_dropout=0.0, target_modules=targets,
                      fan_in_fan_out=conv1d, bias="none")
    inject_adapter_in_model(lora, model)
    return targets


def merge_lora(model: BundledModel, parts: TrainableParts) -> LowRank:
    """Merge the injected adapters into their weights and remove them; returns each weight's update as
    factors U [rows, r], V [r, cols] in the weight's own layout (Conv1D stores W as [in, out])."""
    updates: LowRank = {}
    for name in parts.lora_targets:
        wrapper: Any = model.get_submodule(name)  # peft's lora.LoraLayer around the original projection
        base = wrapper.get_base_layer()
        up, down = (factor.detach().float() for factor in lora_factors(wrapper))  # (α/r) B [out, r], A [r, in]
        rows_out = not getattr(base, "fan_in_fan_out", False) and isinstance(base, nn.Linear)
        factors = (up, down) if rows_out else (down.T.contiguous(), up.T.contiguous())  # W [out, in] or [in, out]
        with torch.no_grad():
            base.weight += (factors[0] @ factors[1]).to(base.weight.dtype)
        parent_name, _, child = name.rpartition(".")
        setattr(model.get_submodule(parent_name), child, base)
        updates[f"{name}.weight"] = factors
    return updates
