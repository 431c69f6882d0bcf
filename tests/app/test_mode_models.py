"""Each mode gets its model: picking Story loads the story bundle, the model box still offers every
bundle, a mode no bundle does is greyed out with the command that builds one, and Generate is off
in a mode the loaded model cannot do."""

from __future__ import annotations

import json
from pathlib import Path

from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from app.controls.modes import MODES
from engine.front_door import BundleInfo
from tests.app.conftest import MakeWindow
from tests.app.fakes import FakeEngine, FakeModel, writes


class TwoModelEngine(FakeEngine):
    """Two bundles in one folder: an LM (continue) and a story model; load() returns the matching model."""

    def __init__(self, folder: Path) -> None:
        lm = BundleInfo(folder / "b-lm", "b-lm", "softmax", "An LM.", tasks=("continue",))
        other_lm = BundleInfo(folder / "a-lm", "a-lm", "softmax", "Another LM.", tasks=("continue",))
        story = BundleInfo(folder / "c-story", "c-story", "softmax", "A story model.", tasks=("story",))
        super().__init__(bundles=[other_lm, lm, story])
        self.models = {"a-lm": FakeModel(writes("continue")), "b-lm": FakeModel(writes("continue")),
                       "c-story": FakeModel(writes("story"))}
        self.loaded: list[str] = []

    def load(self, path: Path, device: str = "auto", runtime: str = "auto") -> FakeModel:
        self.loaded.append(Path(path).name)
        return self.models[Path(path).name]


def _pick(window: object, mode: str) -> None:
    """What a writer's click in the mode picker does."""
    picker = window.controls.mode.picker  # type: ignore[attr-defined]
    picker.setCurrentIndex(MODES.index(mode))
    picker.activated.emit(MODES.index(mode))


def test_mode_loads_its_model_and_the_model_box_can_override(make_window: MakeWindow, qtbot: QtBot,
                                                             tmp_path: Path) -> None:
    (tmp_path / "defaults.json").write_text(json.dumps({"continue": "b-lm", "story": "c-story"}))
    engine = TwoModelEngine(tmp_path)
    window = make_window(engine)
    assert engine.loaded == ["b-lm"]  # Continue's default, not the first folder name
    _pick(window, "story")
    qtbot.waitUntil(lambda: engine.loaded[-1] == "c-story" and window.model is engine.models["c-story"], timeout=5000)
    assert window.controls.model.picker.currentText() == "c-story"
    assert window.controls.generate.isEnabled()
    # the writer picks an LM in the model box while in Story: it loads, the mode says why, Generate is off
    window.controls.model.picker.setCurrentIndex(0)
    window.controls.model.picker.activated.emit(0)
    qtbot.waitUntil(lambda: window.model is engine.models["a-lm"], timeout=5000)
    assert window.controls.mode.mode() == "story" and not window.controls.generate.isEnabled()
    assert "Story needs a model" in window.controls.mode.description.text()
    _pick(window, "continue")  # the loaded LM does it: nothing reloads
    assert engine.loaded[-1] == "a-lm" and window.controls.generate.isEnabled()


def test_mode_without_any_model_is_greyed_out_with_the_command(make_window: MakeWindow, tmp_path: Path) -> None:
    window = make_window(TwoModelEngine(tmp_path))
    items = window.controls.mode.picker.model()
    enabled = {mode: items.item(i).isEnabled() for i, mode in enumerate(MODES)}  # type: ignore[attr-defined]
    assert enabled == {"continue": True, "story": True, "abstract": False, "paraphrase": False}
    tip = window.controls.mode.picker.itemData(MODES.index("abstract"), Qt.ItemDataRole.ToolTipRole)
    assert "variorum build-recipe recipes/permgen-abstract.json" in tip
    window.controls.mode.set_mode("paraphrase")  # e.g. restored from settings
    assert not window.controls.generate.isEnabled()
    assert "no model for it came with this copy" in window.controls.mode.description.text()
    assert "build-recipe recipes/permgen-paraphrase.json" in window.controls.mode.missing.toolTip()


def test_greyed_out_modes_are_explained_in_the_window_in_plain_words(make_window: MakeWindow, tmp_path: Path) -> None:
    window = make_window(TwoModelEngine(tmp_path))
    missing = window.controls.mode.missing
    assert missing.isVisible()
    assert "Abstract and Paraphrase: no model for them came with this copy of Variorum" in missing.text()
    for developer_words in ("variorum", "build-recipe", "shared/data", "bundle"):
        assert developer_words not in missing.text()


def test_picking_a_mode_lets_the_model_prepare_for_it_in_the_background(make_window: MakeWindow, qtbot: QtBot,
                                                                       tmp_path: Path) -> None:
    engine = TwoModelEngine(tmp_path)
    make_window(engine)
    first = engine.models[engine.loaded[0]]
    qtbot.waitUntil(lambda: first.prepared == ["continue"], timeout=5000)  # the mode the window opened in
    window = make_window(engine)
    story = engine.models["c-story"]
    _pick(window, "story")  # loads the story model, which then prepares for Story
    qtbot.waitUntil(lambda: story.prepared == ["story"], timeout=5000)
    _pick(window, "story")  # already loaded: it prepares again (cheap once done), nothing reloads
    qtbot.waitUntil(lambda: story.prepared == ["story", "story"], timeout=5000)
    assert engine.loaded.count("c-story") == 1
