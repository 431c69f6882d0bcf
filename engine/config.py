"""Dataclass configurations saved inside checkpoints and bundles.

Every config round-trips through plain JSON (`to_dict` / `from_dict`) so that a bundle's
`config.json` fully describes how its model was built and trained. Unknown keys are rejected
with the offending names, so a typo in a hand-edited config fails loudly instead of silently.
"""

from __future__ import annotations

import dataclasses
import math
import re
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

# Bumped whenever the on-disk bundle layout or config meaning changes incompatibly
# (docs/training-and-bundles.md lists what each version holds; engine/bundles/bundle.py reads them all).
BUNDLE_FORMAT_VERSION = 2
# How a bundle may store its float weights (loading copies them into float32 parameters).
BUNDLE_DTYPES = ("float32", "float16", "bfloat16")
# How a run trains (engine/training/precision.py): auto = bf16 autocast where the device multiplies bf16 fast.
PRECISIONS = ("auto", "float32", "bf16")

# Upper bound on TrainConfig.lr: an AdamW update moves each weight by about lr, so lr > 10 only
# destroys a model (and near 1e38 overflows float32 inside the optimizer).
MAX_LEARNING_RATE = 10.0

# Backbones (engine/backbones): a language model's decoder (gpt2, llama) or PermGen's encoder-decoder (bart).
BACKBONES = ("gpt2", "llama", "bart")

# What a fine-tune may train (engine/training/trainable.py).
TRAINABLE_PATTERN = r"all|head|lora|last-[1-9][0-9]*"

# How the F² head's frequency classes are made (engine/heads/frequency_classes.py).
F2_CLASS_METHODS = ("mefmax", "fixed-eq-token", "fixed-eq-freq")
GROUP_PRIORS = ("none", "token-mass")  # engine/heads/group_prior.py (what each means)


class ConfigError(ValueError):
    """A configuration value is missing, unknown or out of range."""


# Sane upper bounds on a model's shape, checked before anything is allocated: a hand-edited or
# hostile config.json must not ask for terabytes (GPT-2 XL is 48 x 1600 with 1024 positions).
MODEL_SIZE_LIMITS = {"vocab_size": 1 << 20, "n_layer": 256, "n_head": 1024, "n_embd": 16384, "block_size": 1 << 16}


def _has_type(value: object, annotation: Any) -> bool:
    """True if `value` fits a field annotation (int, float, bool, str, X | None, list/tuple/dict of those).

    bool is not accepted as an int (`n_layer: true`), nor a float as an int (`n_layer: 4.0`);
    an int is a float. Annotations outside this small set are not checked.
    """
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return any(_has_type(value, arg) for arg in args)
    if annotation is type(None):
        return value is None
    if annotation is bool:
        return isinstance(value, bool)
    if annotation is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if annotation is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if annotation is str:
        return isinstance(value, str)
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        return isinstance(value, annotation)
    if origin in (list, tuple):  # JSON has no tuples: a saved tuple comes back as a list
        item = args[0] if args else Any
        return isinstance(value, (list, tuple)) and all(_has_type(v, item) for v in value)
    if origin is dict:
        key, item = args
        return isinstance(value, dict) and all(_has_type(k, key) and _has_type(v, item) for k, v in value.items())
    return True


_FIELD_HINTS: dict[type, dict[str, Any]] = {}


def _field_hints(cls: type) -> dict[str, Any]:
    """`cls`'s resolved annotations, resolved once: resolving evaluates every annotation string again, and
    request settings are checked several times per request."""
    if cls not in _FIELD_HINTS:
        _FIELD_HINTS[cls] = typing.get_type_hints(cls)
    return _FIELD_HINTS[cls]


def check_field_types(instance: object, skip: tuple[str, ...] = ()) -> None:
    """Raise `ConfigError` naming the first field of dataclass `instance` whose value has the wrong type
    (fields in `skip` have their own, more specific check)."""
    hints = _field_hints(type(instance))
    for spec in dataclasses.fields(instance):  # type: ignore[arg-type]
        if spec.name in skip:
            continue
        value = getattr(instance, spec.name)
        if not _has_type(value, hints[spec.name]):
            hint = hints[spec.name]
            expected = hint.__name__ if isinstance(hint, type) else str(hint).replace("typing.", "")
            raise ConfigError(f"{spec.name} must be of type {expected}, got {value!r} ({type(value).__name__})")


def config_from_dict(cls: type[T], data: dict[str, Any]) -> T:
    """Build dataclass `cls` from `data`, naming unknown keys instead of ignoring them."""
    if not isinstance(data, dict):
        raise ConfigError(f"{cls.__name__}: expected a JSON object of fields, got {type(data).__name__}")
    names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(data) - names)
    if unknown:
        raise ConfigError(f"{cls.__name__}: unknown field(s) {unknown}; known: {sorted(names)}")
    return cls(**data)


@dataclass
class ModelConfig:
    """Shape of a decoder-only language model: GPT-2 backbone plus an output head."""

    vocab_size: int = 8192
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 256
    block_size: int = 256  # maximum context length (GPT-2 `n_positions`)
    dropout: float = 0.1
    backbone: str = "gpt2"  # or "llama" (engine/backbones/llama.py), which reads the four fields below
    # Llama: key/value heads (0 = n_head), SwiGLU width (0 = 4·n_embd), RoPE base, RMSNorm epsilon.
    n_kv_head: int = 0
    mlp_width: int = 0
    rope_theta: float = 10000.0
    norm_eps: float = 1e-5
    head: str = "softmax"
    tie_embeddings: bool = True
    # F² head (head="f2"): frequency classes fitted from the tokenizer's training counts.
    f2_class_method: str = "mefmax"  # or the §4.4.1 ablations "fixed-eq-token" / "fixed-eq-freq"
    f2_classes: int = 0  # K; 0 = MefMax chooses (the fitted K is then saved here)
    # POSG head (head="posg"): its POS groups, filled in by training from the tagged text.
    pos_tags: list[str] = field(default_factory=list)
    # F² / POSG on a pretrained base: "token-mass" adds the base's own mass of each group to its logit
    # (engine/heads/group_prior.py), so the new group layer starts at the pretrained distribution.
    group_prior: str = "none"
    # Termination (engine/heads/termination.py): "va" plain, "st" (Eq. 9) or "nmst" (Eq. 10),
    # wrapping whichever head; head "st"/"nmst" is shorthand for the softmax head with that termination.
    termination: str = "va"
    termination_eps: float = 1e-5

    def __post_init__(self) -> None:
        check_field_types(self)
        for name, limit in MODEL_SIZE_LIMITS.items():
            if not 1 <= getattr(self, name) <= limit:
                raise ConfigError(f"{name} must be in [1, {limit}], got {getattr(self, name)}")
        if self.n_embd % self.n_head:
            raise ConfigError(f"n_embd ({self.n_embd}) must be divisible by n_head ({self.n_head})")
        if self.backbone not in BACKBONES:
            raise ConfigError(f"unknown backbone {self.backbone!r}; available: {list(BACKBONES)}")
        self._check_llama_fields()
        if not 0.0 <= self.dropout < 1.0:
            raise ConfigError(f"dropout must be in [0, 1), got {self.dropout}")
        method = self.f2_class_method
        if method not in F2_CLASS_METHODS:
            raise ConfigError(f"f2_class_method must be one of {list(F2_CLASS_METHODS)}, got {method!r}")
        if self.f2_classes < 0 or (self.head == "f2" and method != "mefmax" and not self.f2_classes):
            raise ConfigError(f"f2_classes must be >= 0, and >= 1 for {method!r}; got {self.f2_classes}")
        if self.group_prior not in GROUP_PRIORS or (self.group_prior != "none" and self.head not in ("f2", "posg")):
            raise ConfigError(f"group_prior must be one of {list(GROUP_PRIORS)}, and 'none' unless the head is f2 "
                              f"or posg; got {self.group_prior!r} with head {self.head!r}")
        if self.termination not in ("va", "st", "nmst"):
            raise ConfigError(f"termination must be one of ['va', 'st', 'nmst'], got {self.termination!r}")
        if self.head in ("st", "nmst") and self.termination not in ("va", self.head):
            raise ConfigError(f"head {self.head!r} already sets the termination; got termination={self.termination!r}")
        if not 0.0 < self.termination_eps < 1.0:
            raise ConfigError(f"termination_eps must be in (0, 1), got {self.termination_eps}")

    def _check_llama_fields(self) -> None:
        if not 0 <= self.n_kv_head <= self.n_head or (self.n_kv_head and self.n_head % self.n_kv_head):
            raise ConfigError(f"n_kv_head must divide n_head ({self.n_head}) (0 = n_head), got {self.n_kv_head}")
        if not 0 <= self.mlp_width <= 8 * MODEL_SIZE_LIMITS["n_embd"]:
            raise ConfigError(f"mlp_width must be in [0, {8 * MODEL_SIZE_LIMITS['n_embd']}], got {self.mlp_width}")
        if not (math.isfinite(self.rope_theta) and self.rope_theta > 1.0):
            raise ConfigError(f"rope_theta must be a finite number > 1, got {self.rope_theta}")
        if not 0.0 < self.norm_eps < 1.0:
            raise ConfigError(f"norm_eps must be in (0, 1), got {self.norm_eps}")
        if self.backbone == "llama" and (self.n_embd // self.n_head) % 2:
            raise ConfigError("rotary positions need an even head width; "
                              f"n_embd / n_head = {self.n_embd // self.n_head}")

    @property
    def kv_heads(self) -> int:
        """Key/value heads (grouped-query attention): n_kv_head, or n_head when it is 0."""
        return self.n_kv_head or self.n_head

    @property
    def mlp_hidden(self) -> int:
        """The MLP's inner width: mlp_width, or GPT-2's 4·n_embd when it is 0."""
        return self.mlp_width or 4 * self.n_embd

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class TrainConfig:
    """Optimisation and bookkeeping settings of one training run."""

    train_files: list[str] = field(default_factory=list)
    out_dir: str = "runs/lm"
    valid_fraction: float = 0.05
    batch_size: int = 16  # global batch, in sequences, split across DDP ranks
    grad_accum: int = 1
    max_steps: int = 2000
    lr: float = 1e-3
    min_lr: float = 1e-4
    warmup_steps: int = 100
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.95
    grad_clip: float = 1.0
    eval_every: int = 200
    eval_batches: int = 20
    save_every: int = 500
    seed: int = 1337
    device: str = "auto"
    objective: str = "mle"
    max_docs: int = 0  # 0 = all documents; cap for quick runs
    # AGG and unlikelihood objectives (engine/objectives; validated when the objective is built)
    agg_alpha: float = 0.03  # rare iff a_i / K < alpha
    agg_window: int = 0  # K, steps in the token counter memory; 0 = steps per epoch
    agg_static: bool = False  # Table 10 ablation: rare group frozen after the first epoch
    agg_gate1: bool = True  # Table 9 ablation switch (--no-agg-gate1)
    agg_gate2: bool = True  # Table 9 ablation switch (--no-agg-gate2)
    ul_alpha: float = 1.0  # weight of the token-level unlikelihood term
    ul_seq_rate: float = 0.5  # share of steps using sequence-level UL
    ul_prefix: int = 50  # sequence-level UL: prefix tokens per rollout
    ul_continuation: int = 100  # sequence-level UL: greedy continuation tokens
    ul_ngram: int = 4  # sequence-level UL: repeated n-gram size
    # POSG: how the training text is POS-tagged
    pos_backend: str = "spacy"  # "spacy", "stanza", or "cache": tags cached by one of them (engine/pos/cache.py)
    pos_cache_dir: str = ""  # tag cache folder; "" = the user cache dir
    # torch.compile the training forward: None = on the CPU only (it fuses the elementwise work and
    # casts that dominate a small model's step there); on CUDA only language models (fixed block shapes)
    compile: bool | None = None
    precision: str = "auto"  # auto | float32 | bf16 (engine/training/precision.py)
    early_stop_patience: int = 0  # stop after this many validations without a lower loss; 0 = never
    bundle_dtype: str = "float32"  # how the bundle stores float weights: float32, float16 or bfloat16
    init_from: str = ""  # a bundle folder to fine-tune: its weights and tokenizer (engine/training/start_weights.py)
    # What a fine-tune trains (engine/training/trainable.py): "all", "head", "last-N" (the last N blocks
    # and the head) or "lora" (low-rank adapters of rank lora_rank on every block's projections, and the head)
    trainable: str = "all"
    # With trainable last-N on a Llama: compute the frozen blocks' output for the training text once and train
    # the last blocks on it (engine/training/frozen_prefix.py); not compiled (it looks sequences up by content)
    cache_frozen_blocks: bool = False
    frozen_cache_dir: str = ""  # where those states are kept; "" = <out_dir>/frozen-prefix (runs may share one)
    seq_len: int = 0  # tokens per training sequence of a language model; 0 = its block_size (all positions)
    lora_rank: int = 8
    lora_alpha: int = 16  # the adapters' update is scaled by lora_alpha / lora_rank (LoRA's α)
    # PermGen: each step's batch comes from a pool of this many batches' worth of shuffled examples sorted by
    # length, so a batch pads little (engine/data/blocks.py `LengthBatchOrder`); 0 = plain shuffled batches
    length_pool: int = 0

    def __post_init__(self) -> None:
        check_field_types(self)
        if self.init_from.startswith("~"):  # a recipe names the user models folder as ~/.local/share/…
            self.init_from = str(Path(self.init_from).expanduser())
        for name, value in dataclasses.asdict(self).items():
            if isinstance(value, float) and not math.isfinite(value):  # e.g. --lr inf trains to NaN weights
                raise ConfigError(f"{name} must be a finite number, got {value}")
        if not 0.0 <= self.valid_fraction < 1.0:
            raise ConfigError(f"valid_fraction must be in [0, 1), got {self.valid_fraction}")
        for name in ("batch_size", "grad_accum", "max_steps", "eval_every", "save_every"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.warmup_steps < 0 or self.lr <= 0 or self.min_lr < 0 or self.min_lr > self.lr:
            raise ConfigError("need warmup_steps >= 0 and 0 <= min_lr <= lr, lr > 0")
        if self.lr > MAX_LEARNING_RATE:  # AdamW steps are ~lr per weight: larger ones overflow float32
            raise ConfigError(f"lr must be <= {MAX_LEARNING_RATE:g}, got {self.lr}")
        if self.grad_clip < 0:
            raise ConfigError(f"grad_clip must be >= 0 (0 disables), got {self.grad_clip}")
        if self.early_stop_patience < 0:
            raise ConfigError(f"early_stop_patience must be >= 0 (0 disables), got {self.early_stop_patience}")
        if self.precision not in PRECISIONS:
            raise ConfigError(f"precision must be one of {list(PRECISIONS)}, got {self.precision!r}")
        if self.bundle_dtype not in BUNDLE_DTYPES:
            raise ConfigError(f"bundle_dtype must be one of {list(BUNDLE_DTYPES)}, got {self.bundle_dtype!r}")
        if not re.fullmatch(TRAINABLE_PATTERN, self.trainable):
            raise ConfigError(f"trainable must be all, head, lora or last-N (N >= 1 blocks), got {self.trainable!r}")
        if self.cache_frozen_blocks and (self.compile or not self.trainable.startswith("last-")):
            raise ConfigError("cache_frozen_blocks needs trainable last-N and no compile (it looks sequences up "
                              "by their ids)")
        if self.seq_len < 0:
            raise ConfigError(f"seq_len must be >= 0 (0 = the model's block_size), got {self.seq_len}")
        if self.length_pool < 0:
            raise ConfigError(f"length_pool must be >= 0 (0 = plain shuffled batches), got {self.length_pool}")
        if self.lora_rank < 1 or self.lora_alpha <= 0:
            raise ConfigError(f"need lora_rank >= 1 and lora_alpha > 0, got {self.lora_rank} and {self.lora_alpha}")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
