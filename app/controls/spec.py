"""What each decoding control is, in a writer's words, and how control values become a DecodeConfig.

A method control (F², POSG) is shown exactly when the loaded model's `Capabilities.controls` lists
its DecodeConfig field (engine/controls.py), and only shown controls reach the DecodeConfig: never
a control that silently does nothing. POS bias gets one slider per coarse group the head's tags
cover. Every method control has a widget here (`METHOD` and `POS_BIAS_FIELD`; tests check that).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.api import DecodeConfig
from engine.controls import DECODE_DEFAULTS, Capabilities

OFF = DecodeConfig()  # every control off: the start of each slider the writer's defaults do not name

@dataclass(frozen=True)
class SliderSpec:
    """A numeric control: `field` of DecodeConfig, its range, default and writer-facing help."""

    field: str
    label: str
    minimum: float
    maximum: float
    default: float
    help: str
    integer: bool = False
    log_scale: bool = False
    group: str = "sampling"  # which box it goes in: sampling / f2 / posg
    zones: tuple[tuple[float, str], ...] = ()  # (from this value up, what it does) in rising order, shown by the value

    def zone(self, value: float) -> str:
        """The words for the range `value` is in ("" when the control has no zones)."""
        return next((words for start, words in reversed(self.zones) if value >= start), "")


SAMPLING = (
    SliderSpec("temperature", "Surprise", 0.05, 3.0, OFF.temperature,
               "Temperature: how adventurous the word choice is. Lower is safer and more predictable, higher is "
               "more surprising (and, far up, less coherent)."),
    SliderSpec("top_k", "Likeliest words only", 0, 200, OFF.top_k,
               "Top-k: only consider the k likeliest next words. 0 means no limit. Small values keep text "
               "on familiar ground.", integer=True),
    SliderSpec("top_p", "Trim unlikely words", 0.05, 1.0, DECODE_DEFAULTS.top_p,
               "Top-p (nucleus sampling): only consider the likeliest words that together make up this share of "
               "the probability. 1.0 means no limit; lower values trim unlikely words."),
    SliderSpec("repetition_penalty", "Avoid repeats", 1.0, 2.0, OFF.repetition_penalty,
               "Repetition penalty: discourage reusing words already in the text. 1.0 is off."),
    # 500 tokens (~375 words) is a wait a writer sits through (an estimate, not a measured bound: a few seconds
    # for 8 variants on a 2-core CPU); the engine's own limit (4,096) is for the command line and evaluation.
    SliderSpec("max_new_tokens", "Max length", 1, 500, DECODE_DEFAULTS.max_new_tokens,
               "The most tokens a variant may write before it is cut off (a token is roughly ¾ of a word).",
               integer=True),
)

METHOD = (
    SliderSpec("class_temperature", "Mix of common and rare", 0.05, 3.0, OFF.class_temperature,
               "F² class temperature: how freely the model moves between common and rare word classes before picking a "
               "word. Higher spreads choices across more classes.", group="f2"),
    SliderSpec("class_top_k", "Word classes to consider", 0, 64, OFF.class_top_k,
               "F² class top-k: only the k likeliest frequency classes may be used at each step. 0 means no limit.",
               integer=True, group="f2"),
    SliderSpec("class_rarity_bias", "Rarer words", -5.0, 5.0, OFF.class_rarity_bias,
               "F² rarity bias: push word choice toward rarer words (right) or commoner ones (left). "
               "0 writes as trained. From about +0.8 the shipped models write more non-words "
               "(docs/variants-window.md).", group="f2",
               zones=((-5.0, "commoner words"), (0.0, "as trained"), (0.01, "bolder words"),
                      (0.8, "experimental: may write non-words"))),
    SliderSpec("pos_top_k", "Kinds to consider", 0, 45, DECODE_DEFAULTS.pos_top_k,
               "POS-guided k_POS: how many kinds of word (noun, past-tense verb, adjective, …) may be considered "
               "at each step; fewer keeps grammar tidy, more gives freer structure. 0 means no limit.",
               integer=True, group="posg"),
)

DEFAULT_SEED = 1234  # shown in the seed box until the writer fixes a seed (unfixed, every run draws one)
POS_BIAS_FIELD = "pos_bias"  # DecodeConfig field: dict coarse group → factor in [0.1, 10]
POS_BIAS_RANGE = (0.1, 10.0)
REAL_WORDS_FIELD = "real_words"  # DecodeConfig field: every model, every mode (engine/decoding/real_words.py)
END_AT_SENTENCE_FIELD = "end_at_sentence"  # DecodeConfig field (engine/decoding/sentence_end.py)
END_AT_SENTENCE_HELP = ("A variant that reaches the length limit is cut back to its last full sentence, so it never "
                        "stops mid-sentence. Off: it stops wherever the limit falls.")
REAL_WORDS_HELP = ("Every word written is a real word: one the model saw in training, one of a common English "
                   "word list, or one you typed (names you invent count). Off lets the model invent words.")


def visible_method_controls(capabilities: Capabilities) -> list[SliderSpec]:
    """The method sliders of the controls this model honours (rule in the module docstring)."""
    return [spec for spec in METHOD if spec.field in capabilities.controls]


def pos_bias_groups(capabilities: Capabilities) -> list[str]:
    """Coarse POS groups that get a bias slider ([] when the model has no POS bias)."""
    pos = capabilities.head.pos
    if pos is None or POS_BIAS_FIELD not in capabilities.controls:
        return []
    return list(pos.coarse_groups)


def default_values() -> dict[str, Any]:
    """Control values of a fresh start / the Reset button."""
    values: dict[str, Any] = {spec.field: spec.default for spec in (*SAMPLING, *METHOD)}
    values.update({"n": DECODE_DEFAULTS.variants, "seed_fixed": False, "seed": DEFAULT_SEED, POS_BIAS_FIELD: {},
                   REAL_WORDS_FIELD: DECODE_DEFAULTS.real_words,
                   END_AT_SENTENCE_FIELD: DECODE_DEFAULTS.end_at_sentence})
    return values


def decode_config(values: dict[str, Any], capabilities: Capabilities) -> DecodeConfig:
    """Build the DecodeConfig from control values; only shown method controls are passed on.

    Raises the engine's DecodeSettingError (with its message) for out-of-range values.
    """
    kwargs: dict[str, Any] = {}
    for spec in SAMPLING:
        raw = values.get(spec.field, spec.default)
        kwargs[spec.field] = int(raw) if spec.integer else float(raw)
    for spec in visible_method_controls(capabilities):
        raw = values.get(spec.field, spec.default)
        kwargs[spec.field] = int(raw) if spec.integer else float(raw)
    if pos_bias_groups(capabilities):
        bias = {g: float(f) for g, f in dict(values.get(POS_BIAS_FIELD, {})).items() if float(f) != 1.0}
        kwargs[POS_BIAS_FIELD] = bias
    kwargs["seed"] = int(values["seed"]) if values.get("seed_fixed") else None
    for name in (REAL_WORDS_FIELD, END_AT_SENTENCE_FIELD):
        kwargs[name] = bool(values.get(name, getattr(DECODE_DEFAULTS, name)))
    return DecodeConfig(**kwargs)
