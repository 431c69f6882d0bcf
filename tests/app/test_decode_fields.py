"""The app's decoding controls derive from the fields' declarations (engine/decode_fields): each declared
control is shown (with its label, help and range), no control is undeclared, and the app, the CLI and
`variorum eval` refuse the same out-of-range value with the same bounds."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from PySide6.QtWidgets import QLabel
from pytestqt.qtbot import QtBot

from app.controls.decode_box import DecodeBox
from app.controls.panel import ControlsPanel
from app.controls.seed_box import SeedBox
from app.controls.spec import BUNDLE_STARTS_FOR, STARTS_FOR, decode_config, default_values
from app.persistence.presets import PresetStore
from engine.cli.generate_flags import decode_from_flags
from engine.cli.main import build_parser
from engine.controls import Capabilities
from engine.decode_fields import (
    FIELDS,
    POS_BIAS_FACTORS,
    REPETITION_PENALTY,
    TEMPERATURE,
    Checkbox,
    DecodeField,
    NotOffered,
    Slider,
)
from engine.evaluation.decoders import parse_decoder
from tests.app.fakes import F2, POSG, SOFTMAX


def _shown_fields(box: DecodeBox) -> set[str]:
    seed = {"seed"} if isinstance(box.seed, SeedBox) else set()
    return set(box.sliders) | set(box.checks) | ({"pos_bias"} if box.bias else set()) | seed


def test_every_declared_control_is_shown_and_every_shown_control_is_declared(qtbot: QtBot) -> None:
    box = DecodeBox()
    qtbot.addWidget(box)
    shown: set[str] = set()
    for capabilities in (F2, POSG):  # one head family each: together they honour every method control
        box.set_capabilities(capabilities)
        shown |= _shown_fields(box)
    assert shown == {f.name for f in FIELDS if not isinstance(f.control, NotOffered)}
    assert set(default_values()) - {"n", "seed_fixed", STARTS_FOR, BUNDLE_STARTS_FOR} == shown  # each starts somewhere


@pytest.mark.parametrize("field", [f for f in FIELDS if isinstance(f.control, Slider | Checkbox)],
                         ids=lambda f: f.name)
def test_each_control_says_what_its_declaration_says(qtbot: QtBot, field: DecodeField[object]) -> None:
    box = DecodeBox()
    qtbot.addWidget(box)
    capabilities = POSG if field.method == "posg" else F2
    box.set_capabilities(capabilities)
    if isinstance(field.control, Checkbox):
        check = box.checks[field.name]
        assert (check.text(), check.toolTip(), check.isChecked()) == (field.label, field.help, field.writer_start)
        return
    slider = box.sliders[field.name]
    assert (slider.slider.accessibleName(), slider.slider.toolTip()) == (field.label, field.help)
    assert (slider.spec.minimum, slider.spec.maximum) == (field.control.low, field.control.high)
    assert slider.value() == field.start_on(capabilities.head.method)
    slider.set_value(1e9)  # the slider holds the writer's range, whatever it is given
    assert slider.value() == field.control.high


def _outside(field: DecodeField[object]) -> list[float]:
    """Values just outside the field's bounds (in its kind)."""
    bounds = field.bounds
    assert bounds is not None
    step = 1 if field.kind is int else 0.5
    values = [bounds.low if bounds.low_open else bounds.low - step]
    return values + ([] if bounds.high is None else [bounds.high + step])


NUMBERS = [f for f in FIELDS if f.kind in (int, float) and not f.request]


@pytest.mark.parametrize(("field", "value"), [(f, v) for f in NUMBERS for v in _outside(f)],
                         ids=lambda x: x.name if isinstance(x, DecodeField) else str(x))
def test_the_three_surfaces_refuse_a_value_with_the_same_bounds(field: DecodeField[object], value: float) -> None:
    bounds = f"must be {field.bounds.text() if field.bounds else ''}{field.off_note}, got {field.kind(value)}"
    if not isinstance(field.flag, NotOffered):
        args = build_parser().parse_args(["generate", field.flag.name, str(value)])
        with pytest.raises(ValueError) as cli:
            decode_from_flags(args)
        assert str(cli.value).startswith(f"{field.flag.name} {bounds}"), str(cli.value)
    if not isinstance(field.alias, NotOffered):
        with pytest.raises(ValueError) as spec:
            parse_decoder(f"{field.alias}={value}", 5)
        named = field.alias if field.alias == field.name else f"{field.alias} ({field.name})"
        assert f"{named} {bounds}" in str(spec.value), str(spec.value)
    if not isinstance(field.control, NotOffered):
        capabilities = POSG if field.method == "posg" else F2 if field.method == "f2" else Capabilities()
        values = default_values() | {field.name: value, "seed_fixed": True}
        with pytest.raises(ValueError) as app:
            decode_config(values, capabilities)
        assert str(app.value).startswith(f"“{field.label}” {bounds}"), str(app.value)


def test_the_three_surfaces_refuse_a_pos_bias_factor_with_the_same_bounds() -> None:
    bounds = re.escape(f"POS bias for 'adjectives' must be a number {POS_BIAS_FACTORS.text()}, got 20.0")
    with pytest.raises(ValueError, match=bounds):
        decode_from_flags(build_parser().parse_args(["generate", "--pos-bias", "adjectives=20"]))
    with pytest.raises(ValueError, match=bounds):
        parse_decoder("posbias=adjectives:20", 5)
    with pytest.raises(ValueError, match=bounds):
        decode_config(default_values() | {"pos_bias": {"adjectives": 20.0}}, POSG)


def test_top_k_starts_where_the_loaded_head_draws_its_tokens(qtbot: QtBot) -> None:
    """F² draws a token inside one frequency class: top-k starts at 20 there, off elsewhere; a writer's own
    value survives a change of model, a start follows it, and Reset goes to the loaded model's start."""
    box = DecodeBox()
    qtbot.addWidget(box)
    top_k = box.sliders["top_k"]
    assert top_k.value() == 0  # no model yet
    box.set_capabilities(F2)
    assert top_k.value() == 20 and decode_config(box.values(), F2).top_k == 20
    notes = [label.text() for label in box.f2_box.findChildren(QLabel)]
    assert any("within the chosen class" in note and "starts at 20" in note for note in notes)
    box.set_capabilities(POSG)
    assert top_k.value() == 0 and decode_config(box.values(), POSG).top_k == 0
    top_k.set_value(35)  # the writer's choice stays on every model
    for capabilities in (F2, POSG, Capabilities()):
        box.set_capabilities(capabilities)
        assert top_k.value() == 35
    box.set_capabilities(F2)
    box.set_values(default_values(box.capabilities))  # Reset
    assert top_k.value() == 20 and box.values()[STARTS_FOR] == "f2"


def test_a_value_stored_with_a_model_comes_back_as_it_was_saved(qtbot: QtBot) -> None:
    """Settings saved on an F² model with top-k off (a writer's choice there) stay off after a restart,
    while settings saved at a model's start follow the model that loads."""
    before = DecodeBox()
    qtbot.addWidget(before)
    before.set_capabilities(F2)
    before.sliders["top_k"].set_value(0)
    off_on_f2 = before.values()
    before.set_values(default_values(F2))
    at_f2_start = before.values()
    for saved, on_f2, on_posg in ((off_on_f2, 0, 0), (at_f2_start, 20, 0)):
        after = DecodeBox()  # a restart: settings are applied before the model loads
        qtbot.addWidget(after)
        after.set_values(saved)
        after.set_capabilities(F2)
        assert after.sliders["top_k"].value() == on_f2
        after.set_capabilities(POSG)
        assert after.sliders["top_k"].value() == on_posg


# A model whose bundle says where a writer starts on it (config.json "decode_starts"), on a one-group head.
PRETRAINED = Capabilities(decode_starts=(("temperature", 0.8), ("top_k", 40), ("top_p", 0.95)))


def test_the_controls_start_where_the_bundle_says_and_a_moved_one_stays(qtbot: QtBot, tmp_path: Path) -> None:
    """The bundle's starts, like top-k's on F²: the loaded model's start until the writer moves the slider, and
    Reset goes back to it."""
    panel = ControlsPanel(PresetStore(tmp_path / "presets.json"))
    qtbot.addWidget(panel)
    box = panel.decode
    box.set_capabilities(PRETRAINED)
    starts = {"temperature": 0.8, "top_k": 40, "top_p": 0.95, "repetition_penalty": 1.0}
    assert {name: box.sliders[name].value() for name in starts} == starts
    decode = decode_config(box.values(), PRETRAINED)
    assert (decode.temperature, decode.top_k, decode.top_p) == (0.8, 40, 0.95)
    assert box.sliders["temperature"].slider.toolTip().endswith("This model starts it at 0.8.")
    assert box.sliders["repetition_penalty"].slider.toolTip() == REPETITION_PENALTY.help
    box.sliders["temperature"].set_value(1.2)  # the writer's choice
    box.set_capabilities(F2)
    assert [box.sliders[name].value() for name in ("temperature", "top_k", "top_p")] == [1.2, 20, 0.9]
    assert box.sliders["temperature"].slider.toolTip() == TEMPERATURE.help
    box.set_capabilities(PRETRAINED)
    assert [box.sliders[name].value() for name in ("temperature", "top_k", "top_p")] == [1.2, 40, 0.95]
    panel.reset_controls()
    assert box.sliders["temperature"].value() == 0.8 and box.values()[BUNDLE_STARTS_FOR]["temperature"] == 0.8


def test_values_saved_beside_a_bundles_starts_follow_the_model_that_loads(qtbot: QtBot, tmp_path: Path) -> None:
    """A preset saved at a bundle's starts moves to the next model's; one saved before bundles had starts (no
    BUNDLE_STARTS_FOR) sits at the declarations' starts, so it moves to the bundle's."""
    panel = ControlsPanel(PresetStore(tmp_path / "presets.json"))
    qtbot.addWidget(panel)
    box = panel.decode
    box.set_capabilities(PRETRAINED)
    panel.save_preset("at its starts")
    box.set_capabilities(F2)
    panel.load_preset("at its starts")
    assert [box.sliders[name].value() for name in ("temperature", "top_k", "top_p")] == [1.0, 20, 0.9]
    older = {k: v for k, v in default_values(SOFTMAX).items() if k != BUNDLE_STARTS_FOR}
    restarted = DecodeBox()  # a restart: settings are applied before the model loads
    qtbot.addWidget(restarted)
    restarted.set_values(older)
    restarted.set_capabilities(PRETRAINED)
    assert [restarted.sliders[name].value() for name in ("temperature", "top_k", "top_p")] == [0.8, 40, 0.95]
