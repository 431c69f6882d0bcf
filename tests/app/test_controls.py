"""Controls shown match the bundle's capabilities; modes' validation and errors; presets round-trip."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from PySide6.QtGui import QTextCursor
from pytestqt.qtbot import QtBot

from app.controls import modes, spec
from app.controls.decode_box import DecodeBox
from app.controls.modes import ModeError, ModeInputs, build_request, sentence_order
from app.persistence.presets import PresetError, PresetStore
from engine.controls import METHOD_CONTROLS, Capabilities, ParagraphControls
from engine.front_door import DecodeConfig
from engine.heads.posg import POSGHead
from engine.heads.termination import TerminationHead
from tests.app.conftest import MakeWindow
from tests.app.fakes import F2, NMST, POSG, SOFTMAX, FakeEngine, FakeModel, writes


def _shown(window) -> set[str]:  # type: ignore[no-untyped-def]
    box = window.controls.decode
    return {name for name, slider in box.sliders.items() if slider.spec.group != "sampling"} | set(box.bias)


@pytest.mark.parametrize(
    ("caps", "expected", "f2_box", "posg_box"),
    [
        (SOFTMAX, set(), False, False),
        (F2, {"class_temperature", "class_top_k", "class_rarity_bias"}, True, False),
        (POSG, {"pos_top_k", "adjectives", "nouns"}, False, True),
        (NMST, set(), False, False),
    ],
)
def test_controls_shown_match_capabilities(make_window: MakeWindow, caps: Capabilities, expected: set[str],
                                           f2_box: bool, posg_box: bool) -> None:
    window = make_window(FakeEngine(FakeModel(caps)))
    box = window.controls.decode
    assert _shown(window) == expected
    assert box.f2_box.isVisible() == f2_box and box.posg_box.isVisible() == posg_box
    assert box.termination.isVisible() == (caps.head.termination is not None)
    if caps.head.termination is not None:
        assert "NMST" in box.termination.toolTip() and "1e-05" in box.termination.toolTip()


def test_a_real_posg_nmst_head_shows_its_pos_controls_and_its_ending(make_window: MakeWindow) -> None:
    # the termination head passes the POSG head's tags on: k_POS, a bias per coarse group it has, NMST's ε
    head = TerminationHead(POSGHead(8, 4, ("JJ", "VBD", "<special>")), "nmst", 1e-3, eos_id=0, n_embd=4)
    window = make_window(FakeEngine(FakeModel(Capabilities(head.capabilities()))))
    assert _shown(window) == {"pos_top_k", "adjectives", "verbs"}  # no slider for a coarse group without tags
    assert "NMST" in window.controls.decode.termination.toolTip()
    assert "0.001" in window.controls.decode.termination.toolTip()


def test_every_method_control_has_a_widget() -> None:
    # a control a head announces is never dropped by the app: each has a slider or the POS-bias sliders
    assert {s.field for s in spec.METHOD} | {spec.POS_BIAS_FIELD} == set(METHOD_CONTROLS)
    assert set(METHOD_CONTROLS) <= {f.name for f in dataclasses.fields(DecodeConfig)}  # and reaches the decoder


def test_shown_controls_reach_the_decoder(make_window: MakeWindow, qtbot: QtBot) -> None:
    window = make_window(FakeEngine(FakeModel(POSG)))
    window.controls.decode.set_values({"pos_top_k": 7, "pos_bias": {"adjectives": 10.0}})
    window.generate()
    qtbot.waitUntil(lambda: not window.generator.running, timeout=5000)
    decode = window.engine.model.requests[-1].decode  # type: ignore[attr-defined]
    assert decode.pos_top_k == 7 and decode.pos_bias == {"adjectives": 10.0}
    assert decode.class_top_k == 0  # F² controls are not shown for a POSG head and stay off


def test_real_words_only_is_on_by_default_and_reaches_the_request_with_the_document(
    make_window: MakeWindow, qtbot: QtBot
) -> None:
    window = make_window(FakeEngine(FakeModel(SOFTMAX)))
    box = window.controls.decode.checks["real_words"]
    assert box.text() == "Real words only" and box.isChecked()
    editor = window.tabs.current()
    editor.setPlainText("Zorblax met Quil. ")
    editor.moveCursor(QTextCursor.MoveOperation.End)
    window.generate()
    qtbot.waitUntil(lambda: not window.generator.running, timeout=5000)
    request = window.engine.model.requests[-1]  # type: ignore[attr-defined]
    assert request.decode.real_words and request.document == "Zorblax met Quil. "
    box.setChecked(False)
    assert window.controls.decode.values()["real_words"] is False
    window.generate()
    qtbot.waitUntil(lambda: not window.generator.running, timeout=5000)
    assert not window.engine.model.requests[-1].decode.real_words  # type: ignore[attr-defined]
    window.controls.decode.set_values(spec.default_values())  # Reset switches it back on
    assert box.isChecked()


def test_decode_config_from_values() -> None:
    values = spec.default_values() | {"temperature": 0.7, "top_k": 40, "seed_fixed": True, "seed": 9,
                                      "class_top_k": 3}
    config = spec.decode_config(values, SOFTMAX)
    assert (config.temperature, config.top_k, config.seed, config.class_top_k) == (0.7, 40, 9, 0)
    assert spec.decode_config(values, F2).class_top_k == 3
    assert spec.decode_config(values | {"seed_fixed": False}, SOFTMAX).seed is None


@dataclasses.dataclass(frozen=True)
class PlannedRequest:
    """A stand-in for a future GenerationRequest with the PermGen fields."""

    prompt: str = ""
    n: int = 3
    task: str = "continue"
    decode: DecodeConfig = dataclasses.field(default_factory=DecodeConfig)
    title: str = ""
    keywords: list[str] = dataclasses.field(default_factory=list)
    num_sentences: int = 5
    sentence_order: list[int] | None = None
    document: str = ""


@dataclasses.dataclass(frozen=True)
class OldRequest:
    """A request of an engine without the PermGen fields."""

    prompt: str = ""
    n: int = 3
    task: str = "continue"


def test_modes_disabled_with_reason_without_capability() -> None:
    reason = modes.mode_unavailable_reason("story", SOFTMAX)
    assert "Story needs a model trained for it" in reason and "Continue" in reason
    with pytest.raises(ModeError, match="Paraphrase needs a model"):
        build_request("paraphrase", ModeInputs(selection="x"), 2, DecodeConfig(), SOFTMAX)
    assert modes.mode_unavailable_reason("continue", SOFTMAX) == ""


def test_story_request_validation(monkeypatch: pytest.MonkeyPatch) -> None:
    caps = writes("continue", "story", "abstract", "paraphrase")
    # an engine whose request has no title field cannot take a story: the mode says so instead of dropping it
    monkeypatch.setattr(modes, "GenerationRequest", OldRequest)
    assert "request lacks title" in modes.mode_unavailable_reason("story", caps)
    monkeypatch.setattr(modes, "GenerationRequest", PlannedRequest)
    with pytest.raises(ModeError, match="needs a title"):
        build_request("story", ModeInputs(title="  "), 2, DecodeConfig(), caps)
    request = build_request("abstract", ModeInputs(title="Graph nets", keywords="nodes; edges, ", num_sentences=3,
                                                   order="full", full_order="3 1 2"), 2, DecodeConfig(), caps)
    assert (request.title, request.keywords, request.sentence_order) == ("Graph nets", ["nodes", "edges"], [3, 1, 2])
    with pytest.raises(ModeError, match="Select the passage"):
        build_request("paraphrase", ModeInputs(selection="  "), 2, DecodeConfig(), caps)
    assert build_request("paraphrase", ModeInputs(selection="A b."), 4, DecodeConfig(), caps).prompt == "A b."


def test_sentence_order_control() -> None:
    assert sentence_order(ModeInputs(order="model")) is None
    assert sentence_order(ModeInputs(order="first", first_sentence=3, num_sentences=4)) == [3]
    with pytest.raises(ModeError, match="from 1 to 4"):
        sentence_order(ModeInputs(order="first", first_sentence=5, num_sentences=4))
    with pytest.raises(ModeError, match="exactly once"):
        sentence_order(ModeInputs(order="full", full_order="1, 1, 2", num_sentences=3))
    with pytest.raises(ModeError, match="as numbers"):
        sentence_order(ModeInputs(order="full", full_order="one two", num_sentences=2))


def test_mode_errors_show_in_window_and_app_keeps_running(make_window: MakeWindow, qtbot: QtBot,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    caps = writes("continue", "story", "paraphrase")
    monkeypatch.setattr(modes, "GenerationRequest", PlannedRequest)
    window = make_window(FakeEngine(FakeModel(caps)))
    window.controls.mode.set_mode("paraphrase")
    assert not window.generate()
    assert window.messages.kind == "error" and "Select the passage" in window.messages.label.text()
    window.controls.mode.set_mode("story")
    assert not window.generate()
    assert "needs a title" in window.messages.label.text()
    window.controls.mode.set_mode("abstract")  # not in this bundle's tasks
    missing = "Abstract: no model for it came with this copy"
    assert not window.controls.mode.description.isHidden() and missing in window.controls.mode.description.text()
    assert not window.generate() and missing in window.messages.label.text()
    window.controls.mode.set_mode("paraphrase")
    editor = window.tabs.current()
    editor.setPlainText("The cat sat.")
    editor.moveCursor(QTextCursor.MoveOperation.End, QTextCursor.MoveMode.KeepAnchor)
    editor.selectAll()
    assert window.generate()
    qtbot.waitUntil(lambda: not window.generator.running, timeout=5000)
    assert window.engine.model.requests[-1].prompt == "The cat sat."  # type: ignore[attr-defined]


def test_presets_round_trip(make_window: MakeWindow, home) -> None:  # type: ignore[no-untyped-def]
    window = make_window(FakeEngine(FakeModel(POSG)))
    controls = window.controls
    controls.decode.set_values({"temperature": 0.6, "top_k": 25, "n": 5, "pos_bias": {"nouns": 0.1},
                                "seed_fixed": True, "seed": 77})
    saved = controls.decode.values()
    controls.save_preset("Sparse nouns")
    controls.reset_controls()
    assert controls.decode.values()["temperature"] == 1.0 and controls.decode.values()["pos_bias"] == {}
    controls.load_preset("Sparse nouns")
    assert controls.decode.values() == saved
    again = PresetStore(Path(home.presets_file))  # persisted on disk
    assert again.names() == ["Sparse nouns"] and again.load("Sparse nouns") == saved
    with pytest.raises(PresetError):
        again.load("nope")
    controls.preset_picker.setCurrentText("")
    controls._save_clicked()
    assert window.statusBar().currentMessage() == "a preset needs a name"


def test_sentence_boxes_follow_the_loaded_models_limit(make_window: MakeWindow) -> None:
    story = Capabilities(tasks=("story",), paragraph=ParagraphControls(4, True, True, "hierarchical"))
    window = make_window(FakeEngine(FakeModel(story)))
    mode = window.controls.mode
    assert mode.sentences.maximum() == mode.first.maximum() == 4
    with pytest.raises(ModeError, match="from 1 to 4"):
        build_request("story", ModeInputs(title="T", num_sentences=5), 2, DecodeConfig(), story)


def test_guidance_is_shown_and_sent_only_where_the_model_guides_the_modes_task(qtbot: QtBot) -> None:
    box = DecodeBox()
    qtbot.addWidget(box)
    story_model = dataclasses.replace(SOFTMAX, tasks=("story",))
    paraphrase_model = dataclasses.replace(SOFTMAX, tasks=("paraphrase",),  # a PermGen one samples its rewrites
                                           paragraph=ParagraphControls(1, False, True, "rotary"))
    cases = [(SOFTMAX, "continue", True), (story_model, "story", True), (SOFTMAX, "paraphrase", False),
             (paraphrase_model, "paraphrase", True), (SOFTMAX, "paraphrase", False)]
    for capabilities, task, guided in cases:
        box.set_capabilities(capabilities)
        box.set_task(task)
        assert box.sampling_form.isRowVisible(box.sliders["guidance"]) is guided, (capabilities.tasks, task)
        box.sliders["guidance"].set_value(2.0)
        assert spec.decode_config(box.values(), capabilities, task).guidance == (2.0 if guided else 1.0)
