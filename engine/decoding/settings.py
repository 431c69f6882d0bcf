"""Decoding settings a writer (or the CLI) chooses, checked once, up front, and saved with results.

Each field is declared in engine/decode_fields (its type, bounds, default and where a writer starts);
`DecodeConfig` carries the values with their Python types, takes its defaults from those declarations
and checks every value against its declaration when it is made. `replace` and `with_seed` check only
the fields they change: the others were checked when this config was made. The processors built from
a config (`processors`, `group_processors`) still assert their own preconditions, but a value a writer
gives is refused here first, by its declaration, with its field, value and bounds.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.config import config_from_dict
from engine.controls import CLASS_CONTROLS, POS_CONTROLS
from engine.decode_fields import (
    BY_NAME,
    CLASS_RARITY_BIAS,
    CLASS_TEMPERATURE,
    CLASS_TOP_K,
    COPY_LIMIT,
    DRAFTS,
    END_AT_SENTENCE,
    FLAT_SAMPLING,
    GREEDY,
    GUIDANCE,
    MAX_NEW_TOKENS,
    NO_DOUBLED_WORDS,
    POS_TOP_K,
    REAL_WORDS,
    REPETITION_PENALTY,
    SEED,
    TEMPERATURE,
    TOP_K,
    TOP_P,
    DecodeSettingError,
)
from engine.decoding.class_sampling import ClassTemperature, ClassTopK, RarityBias
from engine.decoding.pos_sampling import check_pos_bias, pos_group_processors
from engine.decoding.processors import RepetitionPenalty, ScoreProcessor, Temperature, TopK, TopP


@dataclass(frozen=True)
class DecodeConfig:
    """How to pick tokens; each field's off value (its default) switches that control off.

    Every field is checked against its declaration (engine/decode_fields) when the config is made:
    a value of the wrong type (1.5 tokens, a string temperature) or outside its bounds raises
    `DecodeSettingError` (a ValueError) naming the field, the value and the bounds, before any
    token is generated; so do controls that exclude each other (flat sampling and group controls).
    """

    max_new_tokens: int = MAX_NEW_TOKENS.off
    temperature: float = TEMPERATURE.off
    top_k: int = TOP_K.off
    top_p: float = TOP_P.off
    repetition_penalty: float = REPETITION_PENALTY.off
    greedy: bool = GREEDY.off  # argmax instead of sampling (processors still apply)
    # classifier-free guidance γ (engine/decoding/guidance.py): every family's sampled streams; 1 = off
    guidance: float = GUIDANCE.off
    seed: int | None = SEED.off  # base seed; variant i uses seed + i; None = random
    # --- F² class sampling (engine/decoding/class_sampling.py): group stage, F² heads only ---
    class_temperature: float = CLASS_TEMPERATURE.off  # divides log p(class): < 1 sharper, > 1 flatter
    class_top_k: int = CLASS_TOP_K.off  # keep the k most probable classes
    class_rarity_bias: float = CLASS_RARITY_BIAS.off  # > 0 favours rarer classes, < 0 frequent ones
    flat_sampling: bool = FLAT_SAMPLING.off  # ablation (F² Table 3): token from p(x), no class stage
    # --- POSG POS-guided sampling (engine/decoding/pos_sampling.py): group stage, POSG heads only.
    # (flat_sampling above is POSG's "w/o POSG-sampling" ablation, Table 7, too.)
    pos_top_k: int = POS_TOP_K.off  # k_POS: keep the k most probable POS tags
    pos_bias: dict[str, float] = field(default_factory=dict, hash=False)  # "JJ"/"adjectives" → factor
    # --- real words only (engine/decoding/real_words.py): every head; the writer starts with it on ---
    real_words: bool = REAL_WORDS.off
    # --- paraphrases only (engine/decoding/copy_limit.py): the longest run of source tokens a rewrite may repeat ---
    copy_limit: int = COPY_LIMIT.off
    # --- end at a sentence (engine/decoding/sentence_end.py): a variant the length limit stops is cut back
    # to its last complete sentence; language models (PermGen's sentences end with their marks) ---
    end_at_sentence: bool = END_AT_SENTENCE.off
    # --- no doubled words (engine/decoding/doubled_words.py): sampled decodes of every head ---
    no_doubled_words: bool = NO_DOUBLED_WORDS.off
    # --- over-generate and select (engine/selection): K drafts per variant shown; every family ---
    drafts: int = DRAFTS.off

    def __post_init__(self) -> None:
        for spec in dataclasses.fields(self):
            BY_NAME[spec.name].check(getattr(self, spec.name))
        check_pos_bias(self.pos_bias)
        self._check_combination()

    def _check_combination(self) -> None:
        """Refuse group controls with flat sampling or guidance, which skip the group stage they act on."""
        if self.flat_sampling and self.active_class_controls():
            raise DecodeSettingError("class controls act on the class stage, which flat_sampling skips; use one")
        if self.flat_sampling and any(name in POS_CONTROLS for name in self.active_fields()):
            raise DecodeSettingError("pos_top_k / pos_bias act on the POS stage, which flat_sampling skips; use one")
        grouped = [name for name in self.active_fields() if name in (*CLASS_CONTROLS, *POS_CONTROLS)]
        if self.guidance != GUIDANCE.off and grouped:
            named = ", ".join(f"{name} (“{BY_NAME[name].label}”)" for name in grouped)
            raise DecodeSettingError(f"guidance (“{GUIDANCE.label}”) draws each token from the guided p(x) in one "
                                     f"stage, which skips the group stage {named} act(s) on; use one")

    def replace(self, **changes: Any) -> DecodeConfig:
        """These settings with `changes`, checking only the changed fields (and the combination)."""
        names = {spec.name for spec in dataclasses.fields(self)}
        for name, value in changes.items():
            if name not in names:
                raise DecodeSettingError(f"{name} is not a decoding setting; known: {sorted(names)}")
            BY_NAME[name].check(value)
        if "pos_bias" in changes:
            check_pos_bias(changes["pos_bias"])
        changed = copy.copy(self)
        for name, value in changes.items():  # as the frozen dataclass's own __init__ sets its fields
            object.__setattr__(changed, name, value)
        changed._check_combination()
        return changed

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
        return [spec.name for spec in dataclasses.fields(self)
                if spec.name not in ("seed", "max_new_tokens") and getattr(self, spec.name) != BY_NAME[spec.name].off]

    def with_seed(self, seed: int) -> DecodeConfig:
        """These settings with base seed `seed` (only the seed is checked)."""
        return self.replace(seed=seed)

    def variant_record(self, seed: int) -> dict[str, Any]:
        """What variant i records: these settings with its own seed, base + i. Only the base is bounded by
        MAX_SEED (which leaves room for every variant's seed), so this one is not checked again."""
        return {**self.to_dict(), "seed": seed}

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DecodeConfig:
        return config_from_dict(cls, data)
