"""Decoding settings a writer (or the CLI) chooses, validated up front and saved with results."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.config import ConfigError, check_field_types, config_from_dict
from engine.controls import CLASS_CONTROLS, DECODE_DEFAULTS, MAX_SEED
from engine.decoding.class_sampling import ClassTemperature, ClassTopK, RarityBias
from engine.decoding.copy_limit import MAX_COPY_LIMIT
from engine.decoding.pos_sampling import pos_group_processors
from engine.decoding.processors import (
    DecodeSettingError,
    RepetitionPenalty,
    ScoreProcessor,
    Temperature,
    TopK,
    TopP,
)

MAX_NEW_TOKENS_LIMIT = 4096
# Ranges a writer can use and the decoder computes stably in float32: a temperature of 1e-39 or a
# top-p of 1e-300 would underflow every score to −inf (no token left to sample), and a penalty of
# 1e39 overflows. For "always the likeliest token" use `greedy`, not a near-zero temperature.
TEMPERATURE_RANGE = (0.01, 100.0)  # temperature and class_temperature
TOP_P_RANGE = (1e-6, 1.0)
REPETITION_PENALTY_RANGE = (1.0, 100.0)


@dataclass(frozen=True)
class DecodeConfig:
    """How to pick tokens; 0 / 1.0 values switch a control off.

    Every field is checked when the config is made: a value of the wrong type (1.5 tokens, a
    string temperature) or outside its range raises `DecodeSettingError` (a ValueError) naming
    the field and the valid range, before any token is generated. Ranges: max_new_tokens
    [1, MAX_NEW_TOKENS_LIMIT]; temperature and class_temperature in TEMPERATURE_RANGE; top_p in
    TOP_P_RANGE; repetition_penalty in REPETITION_PENALTY_RANGE; class_rarity_bias in [-10, 10];
    copy_limit [0, MAX_COPY_LIMIT]; seed a non-negative 63-bit integer or None.
    """

    max_new_tokens: int = DECODE_DEFAULTS.max_new_tokens  # one default for engine, CLI, app (engine/controls.py)
    temperature: float = 1.0
    top_k: int = 0  # 0 = no top-k truncation
    top_p: float = 1.0  # 1.0 = no nucleus truncation
    repetition_penalty: float = 1.0
    greedy: bool = False  # argmax instead of sampling (processors still apply)
    seed: int | None = None  # base seed; variant i uses seed + i; None = random
    # --- F² class sampling (engine/decoding/class_sampling.py): group stage, F² heads only ---
    class_temperature: float = 1.0  # divides log p(class): < 1 sharper, > 1 flatter
    class_top_k: int = 0  # keep the k most probable classes; 0 = off
    class_rarity_bias: float = 0.0  # in [-10, 10]: > 0 favours rarer classes, < 0 frequent ones; 0 = as trained
    flat_sampling: bool = False  # ablation (F² Table 3): sample from the marginal p(x), not class then token
    # --- POSG POS-guided sampling (engine/decoding/pos_sampling.py): group stage, POSG heads only.
    # (flat_sampling above is POSG's "w/o POSG-sampling" ablation, Table 7, too.)
    pos_top_k: int = 0  # k_POS: keep the k most probable POS tags; 0 = off (paper: 20 for LM, 5 for paraphrase)
    pos_bias: dict[str, float] = field(default_factory=dict, hash=False)  # "JJ"/"adjectives" → factor in [0.1, 10]
    # --- real words only (engine/decoding/real_words.py): every head; the writer starts with it on ---
    real_words: bool = False
    # --- paraphrases only (engine/decoding/copy_limit.py): the longest run of source tokens a rewrite may repeat ---
    copy_limit: int = 0  # 0 = no limit
    # --- end at a sentence (engine/decoding/sentence_end.py): a variant the length limit stops is cut back
    # to its last complete sentence; language models (PermGen's sentences end with their marks) ---
    end_at_sentence: bool = False

    def __post_init__(self) -> None:
        try:
            check_field_types(self, skip=("pos_bias",))  # pos_bias: checked with its range by pos_sampling
        except ConfigError as error:
            raise DecodeSettingError(str(error)) from None
        if not isinstance(self.pos_bias, dict):
            raise DecodeSettingError(f"pos_bias must be a dict of tag or group → factor, got {self.pos_bias!r}")
        for name, (low, high) in (("temperature", TEMPERATURE_RANGE), ("class_temperature", TEMPERATURE_RANGE),
                                  ("top_p", TOP_P_RANGE), ("repetition_penalty", REPETITION_PENALTY_RANGE)):
            if not low <= getattr(self, name) <= high:  # NaN fails too
                raise DecodeSettingError(f"{name} must be in [{low:g}, {high:g}], got {getattr(self, name)}")
        if not 1 <= self.max_new_tokens <= MAX_NEW_TOKENS_LIMIT:
            raise DecodeSettingError(
                f"max_new_tokens must be in [1, {MAX_NEW_TOKENS_LIMIT}], got {self.max_new_tokens}"
            )
        if self.top_k < 0:
            raise DecodeSettingError(f"top_k must be >= 0 (0 = off), got {self.top_k}")
        if self.class_top_k < 0:
            raise DecodeSettingError(f"class_top_k must be >= 0 (0 = off), got {self.class_top_k}")
        if self.flat_sampling and self.active_class_controls():
            raise DecodeSettingError("class controls act on the class stage, which flat_sampling skips; use one")
        if self.pos_top_k < 0:  # POSG
            raise DecodeSettingError(f"pos_top_k must be >= 0 (0 = off), got {self.pos_top_k}")
        if self.flat_sampling and (self.pos_top_k or self.pos_bias):
            raise DecodeSettingError("pos_top_k / pos_bias act on the POS stage, which flat_sampling skips; use one")
        if not 0 <= self.copy_limit <= MAX_COPY_LIMIT:
            raise DecodeSettingError(f"copy_limit must be in [0, {MAX_COPY_LIMIT}] (0 = no limit), "
                                     f"got {self.copy_limit}")
        if self.seed is not None and not 0 <= self.seed <= MAX_SEED:
            raise DecodeSettingError(f"seed must be a non-negative 63-bit integer, got {self.seed}")
        self.processors()  # validates the remaining ranges
        self.group_processors()

    def processors(self) -> list[ScoreProcessor]:
        """The token-level processors, in the order they apply."""
        chain: list[ScoreProcessor] = []
        if self.repetition_penalty != 1.0:
            chain.append(RepetitionPenalty(self.repetition_penalty))
        if self.temperature != 1.0:
            chain.append(Temperature(self.temperature))
        if self.top_k:
            chain.append(TopK(self.top_k))
        if self.top_p != 1.0:
            chain.append(TopP(self.top_p))
        return chain

    def group_processors(self, group_names: Sequence[str] | None = None) -> list[ScoreProcessor]:
        """Processors for the first sampling stage, over the head's G groups (scores [N, G]).

        Group-level controls (F² class sampling, POSG POS bias) add their processors here;
        with none, the group is drawn from the head's own group distribution. `group_names`
        (the head's) resolve POS bias names to groups; without them POS controls are only validated.
        """
        chain: list[ScoreProcessor] = []
        # F² class controls: bias first, then temperature and top-k on the biased scores.
        if self.class_rarity_bias != 0.0:
            chain.append(RarityBias(self.class_rarity_bias))
        if self.class_temperature != 1.0:
            chain.append(ClassTemperature(self.class_temperature))
        if self.class_top_k:
            chain.append(ClassTopK(self.class_top_k))
        # POSG POS controls: POS bias, then k_POS on the biased p(ρ).
        chain.extend(pos_group_processors(self.pos_bias, self.pos_top_k, group_names))
        return chain

    def active_class_controls(self) -> list[str]:
        """Names of the F² class controls set away from their defaults."""
        return [name for name in self.active_fields() if name in CLASS_CONTROLS]

    def active_fields(self) -> list[str]:
        """Names of the fields set away from their defaults (seed and length excluded)."""
        plain = DecodeConfig()
        return [f.name for f in dataclasses.fields(self)
                if f.name not in ("seed", "max_new_tokens") and getattr(self, f.name) != getattr(plain, f.name)]

    def with_seed(self, seed: int) -> DecodeConfig:
        return dataclasses.replace(self, seed=seed)

    def variant_record(self, seed: int) -> dict[str, Any]:
        """What variant i records: these settings with its own seed, base + i. Only the base is bounded by
        MAX_SEED (which leaves room for every variant's seed), so this one is not checked again."""
        return {**self.to_dict(), "seed": seed}

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DecodeConfig:
        return config_from_dict(cls, data)
