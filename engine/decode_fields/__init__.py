"""The decoding fields a writer can set, each declared once (`table.py`), and what a declaration holds.

Everything else derives from the declarations: `DecodeConfig`'s defaults and validation
(engine/decoding/settings.py), the `variorum generate` flags (engine/cli/generate_flags.py), the
`variorum eval` decoder aliases (engine/evaluation/decoders.py), the app's controls
(app/controls/spec.py) and which heads honour a field (engine/controls.py). Imports no torch.
"""

from engine.decode_fields.declaration import (
    Bounds,
    Checkbox,
    Control,
    DecodeField,
    DecodeSettingError,
    FactorSliders,
    Flag,
    NotOffered,
    SeedBox,
    Slider,
    number_text,
)
from engine.decode_fields.table import (
    BEAM_WIDTH,
    BY_NAME,
    CLASS_RARITY_BIAS,
    CLASS_TEMPERATURE,
    CLASS_TOP_K,
    COPY_LIMIT,
    DRAFTS,
    END_AT_SENTENCE,
    FIELDS,
    FLAT_SAMPLING,
    GREEDY,
    GUIDANCE,
    MAX_BEAM_WIDTH,
    MAX_COPY_LIMIT,
    MAX_NEW_TOKENS,
    MAX_SEED,
    NO_DOUBLED_WORDS,
    POS_BIAS,
    POS_BIAS_FACTORS,
    POS_TOP_K,
    REAL_WORDS,
    REPETITION_PENALTY,
    SEED,
    TEMPERATURE,
    TOP_K,
    TOP_P,
)

__all__ = [
    "BEAM_WIDTH", "BY_NAME", "CLASS_RARITY_BIAS", "CLASS_TEMPERATURE", "CLASS_TOP_K", "COPY_LIMIT", "DRAFTS",
    "END_AT_SENTENCE",
    "FIELDS", "FLAT_SAMPLING", "GREEDY", "GUIDANCE", "MAX_BEAM_WIDTH", "MAX_COPY_LIMIT", "MAX_NEW_TOKENS", "MAX_SEED",
    "NO_DOUBLED_WORDS", "POS_BIAS", "POS_BIAS_FACTORS", "POS_TOP_K", "REAL_WORDS",
    "REPETITION_PENALTY", "SEED", "TEMPERATURE", "TOP_K", "TOP_P", "Bounds", "Checkbox", "Control", "DecodeField",
    "DecodeSettingError", "FactorSliders", "Flag", "NotOffered", "SeedBox", "Slider", "number_text",
]
