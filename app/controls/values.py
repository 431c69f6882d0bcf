"""Checking stored control values (settings, presets) before they reach the widgets, without Qt.

A value that is the wrong type, not finite, or outside what its control can hold (e.g. a seed
beyond the engine's range) is dropped and named, so one bad entry never stops the app starting;
the control keeps its default. Values the app does not know are kept for controls of other bundles.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from app.controls.spec import BUNDLE_STARTS_FOR, CHECKBOXES, POS_BIAS_FIELD, SLIDERS, STARTS_FOR
from engine.controls import MAX_VARIANTS
from engine.decode_fields import MAX_SEED, SEED  # one seed range end to end (random bases are < 2**62)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _is_whole(value: Any, low: int, high: int) -> bool:
    return _is_number(value) and float(value).is_integer() and low <= value <= high


def _bias_ok(bias: Any) -> bool:
    return isinstance(bias, dict) and all(isinstance(k, str) and _is_number(v) and v > 0 for k, v in bias.items())


def _starts_ok(starts: Any) -> bool:
    return isinstance(starts, dict) and all(isinstance(k, str) and _is_number(v) for k, v in starts.items())


# A slider clamps a number to its range, so any finite number is usable there.
CHECKS: dict[str, Callable[[Any], bool]] = {
    **{spec.field: _is_number for spec in SLIDERS},
    "n": lambda v: _is_whole(v, 1, MAX_VARIANTS),
    SEED.name: lambda v: _is_whole(v, 0, MAX_SEED),
    **{name: (lambda v: isinstance(v, bool)) for name in ("seed_fixed", *(field.name for field in CHECKBOXES))},
    POS_BIAS_FIELD: _bias_ok,
    STARTS_FOR: lambda v: isinstance(v, str),
    BUNDLE_STARTS_FOR: _starts_ok,
}


def clean_control_values(values: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The usable values, and the names of those dropped (wrong type, NaN/∞, out of range)."""
    clean: dict[str, Any] = {}
    dropped: list[str] = []
    for name, value in values.items():
        check = CHECKS.get(name)
        if check is None or check(value):
            clean[name] = value
        else:
            dropped.append(str(name))
    return clean, dropped
