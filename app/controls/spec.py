"""What each decoding control is, in a writer's words, and how control values become a DecodeConfig.

Every control derives from its field's declaration (engine/decode_fields): its label and tooltip, a
slider's range and start, a checkbox's start, and its box (the head family that honours it: F² or
POSG; the rest go in "Word choice"); where a slider starts may depend on the loaded model (its head, its
bundle's "decode_starts": `Capabilities.start_of`). A method control (F², POSG) is shown exactly when the loaded
model's `Capabilities.controls` lists its DecodeConfig field (engine/controls.py), guidance exactly where the
model guides the mode's task (`Capabilities.guides`), and only shown controls reach the DecodeConfig: never a
control that silently does nothing. POS bias gets one
slider per coarse group the head's tags cover.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from engine.controls import DEFAULT_VARIANTS, Capabilities, model_start
from engine.decode_fields import (
    BY_NAME,
    FIELDS,
    GUIDANCE,
    POS_BIAS,
    SEED,
    Checkbox,
    DecodeField,
    DecodeSettingError,
    Slider,
)
from engine.front_door import DecodeConfig


@dataclass(frozen=True)
class SliderSpec:
    """A numeric control: `field` of DecodeConfig, its slider's range, start and writer-facing help."""

    field: str
    label: str
    minimum: float
    maximum: float
    default: float
    help: str
    off: float  # the field's off value
    integer: bool = False
    says_off: bool = False  # the readout says "off" at `off`
    group: str = "sampling"  # which box it goes in: sampling / f2 / posg
    zones: tuple[tuple[float, str], ...] = ()  # (from this value up, what it does) in rising order, shown by the value

    def zone(self, value: float) -> str:
        """The words for the range `value` is in ("" when the control has no zones)."""
        return next((words for start, words in reversed(self.zones) if value >= start), "")


def _slider(field: DecodeField[Any], slider: Slider) -> SliderSpec:
    return SliderSpec(field.name, field.label, slider.low, slider.high, field.writer_start, field.help, field.off,
                      integer=field.kind is int, says_off=slider.says_off, group=field.method or "sampling",
                      zones=slider.zones)


SLIDERS = tuple(_slider(f, f.control) for f in FIELDS if isinstance(f.control, Slider))
SAMPLING = tuple(s for s in SLIDERS if s.group == "sampling")  # the "Word choice" box
METHOD = tuple(s for s in SLIDERS if s.group != "sampling")  # the F² and POSG boxes
CHECKBOXES = tuple(f for f in FIELDS if isinstance(f.control, Checkbox))

DEFAULT_SEED = 1234  # shown in the seed box until the writer fixes a seed (unfixed, every run draws one)
POS_BIAS_FIELD = POS_BIAS.name  # DecodeConfig field: dict coarse group → factor (engine/decode_fields)
# "Word choice" sliders whose start depends on the model (top-k: 20 on an F² model; the sampling starts a bundle
# gives), and the keys under which stored values (settings, presets, a batch's settings) say which model's starts
# they were set for: its head's groups, and its bundle's own starts ({} for none, or saved before bundles had them).
MODEL_STARTS: tuple[DecodeField[float], ...] = tuple(
    cast(DecodeField[float], f) for f in FIELDS
    if (f.method_starts or f.bundle_start) and isinstance(f.control, Slider))
STARTS_FOR = "starts_for"
BUNDLE_STARTS_FOR = "bundle_starts_for"


def start_beside(field: DecodeField[float], method: str, bundle_starts: dict[str, float]) -> float:
    """Where `field` starts on a model whose head's groups are `method` and whose bundle gives `bundle_starts`."""
    return float(model_start(field, method, bundle_starts.items()))


def visible_method_controls(capabilities: Capabilities) -> list[SliderSpec]:
    """The method sliders of the controls this model honours (rule in the module docstring)."""
    return [spec for spec in METHOD if spec.field in capabilities.controls]


def pos_bias_groups(capabilities: Capabilities) -> list[str]:
    """Coarse POS groups that get a bias slider ([] when the model has no POS bias)."""
    pos = capabilities.head.pos
    if pos is None or POS_BIAS_FIELD not in capabilities.controls:
        return []
    return list(pos.coarse_groups)


def default_values(capabilities: Capabilities | None = None) -> dict[str, Any]:
    """Control values of a fresh start / the Reset button, on the model of `capabilities` (None: before a model
    loads, where the app assumes a plain language model)."""
    capabilities = Capabilities() if capabilities is None else capabilities
    values: dict[str, Any] = {spec.field: spec.default for spec in SLIDERS}
    values.update({field.name: capabilities.start_of(field) for field in MODEL_STARTS})
    values[STARTS_FOR] = capabilities.head.method
    values[BUNDLE_STARTS_FOR] = dict(capabilities.decode_starts)
    values.update({field.name: field.writer_start for field in CHECKBOXES})
    values.update({"n": DEFAULT_VARIANTS, "seed_fixed": False, SEED.name: DEFAULT_SEED, POS_BIAS_FIELD: {}})
    return values


def shown_sampling(capabilities: Capabilities, task: str) -> tuple[SliderSpec, ...]:
    """The "Word choice" sliders shown for `task` on this model: all but guidance where it does not act there."""
    return tuple(spec for spec in SAMPLING if spec.field != GUIDANCE.name or capabilities.guides(task))


def decode_config(values: dict[str, Any], capabilities: Capabilities, task: str = "continue") -> DecodeConfig:
    """Build the DecodeConfig from control values for `task`; only shown controls are passed on.

    A value outside its field's bounds raises the engine's DecodeSettingError, naming the control by its label.
    """
    kwargs: dict[str, Any] = {}
    for spec in (*shown_sampling(capabilities, task), *visible_method_controls(capabilities)):
        raw = values.get(spec.field, spec.default)
        kwargs[spec.field] = int(raw) if spec.integer else float(raw)
    if pos_bias_groups(capabilities):
        bias = {g: float(f) for g, f in dict(values.get(POS_BIAS_FIELD, {})).items() if float(f) != 1.0}
        kwargs[POS_BIAS_FIELD] = bias
    kwargs[SEED.name] = int(values[SEED.name]) if values.get("seed_fixed") else None
    for field in CHECKBOXES:
        kwargs[field.name] = bool(values.get(field.name, field.writer_start))
    try:
        return DecodeConfig(**kwargs)
    except DecodeSettingError as error:
        named = BY_NAME.get(error.field)
        if named is None:
            raise
        raise DecodeSettingError(error.naming(f"“{named.label}”"), error.field, error.problem) from None
