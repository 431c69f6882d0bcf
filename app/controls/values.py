"""Checking stored control values (settings, presets) before they reach the widgets, without Qt.

A value that is the wrong type, not finite, or outside what its control can hold (e.g. a seed
beyond the engine's range) is dropped and named, so one bad entry never stops the app starting;
the control keeps its default. Values the app does not know are kept for controls of other bundles.
"""

from __future__ import annotations

import math
from typing import Any

from app.controls.spec import END_AT_SENTENCE_FIELD, METHOD, POS_BIAS_FIELD, REAL_WORDS_FIELD, SAMPLING
from engine.controls import MAX_SEED, MAX_VARIANTS  # one seed range end to end (random bases are < 2**62)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _is_whole(value: Any, low: int, high: int) -> bool:
    return _is_number(value) and float(value).is_integer() and low <= value <= high


def _bias_ok(bias: Any) -> bool:
    return isinstance(bias, dict) and all(isinstance(k, str) and _is_number(v) and v > 0 for k, v in bias.items())


CHECKS = {
    **{spec.field: _is_number for spec in (*SAMPLING, *METHOD)},
    "n": lambda v: _is_whole(v, 1, MAX_VARIANTS),
    "seed": lambda v: _is_whole(v, 0, MAX_SEED),
    **{name: (lambda v: isinstance(v, bool)) for name in ("seed_fixed", REAL_WORDS_FIELD, END_AT_SENTENCE_FIELD)},
    POS_BIAS_FIELD: _bias_ok,
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
