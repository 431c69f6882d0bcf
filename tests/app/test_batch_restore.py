"""A past batch comes back as it was: "Restore selected batch" shows its variants on the Variants tab, its
history entry names the model that wrote it, and "Use its settings" restores "Same variants each time" (with
the batch's seed) and the batch's model."""

from __future__ import annotations

from pathlib import Path

from pytestqt.qtbot import QtBot

from app.editor.history import Batch
from engine.front_door import BundleInfo
from tests.app.conftest import MakeWindow
from tests.app.fakes import FakeEngine, FakeModel, writes


def _generate(window, qtbot: QtBot) -> None:  # type: ignore[no-untyped-def]
    assert window.generate()
    qtbot.waitUntil(lambda: not window.generator.running, timeout=5000)


def test_use_its_settings_brings_back_same_variants_each_time(make_window: MakeWindow, qtbot: QtBot) -> None:
    window = make_window()
    decode = window.controls.decode
    decode.seed_fixed.setChecked(True)
    decode.seed.setValue(42)
    _generate(window, qtbot)  # batch 0: fixed seed 42
    decode.seed_fixed.setChecked(False)
    _generate(window, qtbot)  # batch 1: new variants each time
    decode.seed.setValue(7)
    window.use_batch_settings(0)
    assert decode.seed_fixed.isChecked() and decode.seed.value() == 42
    window.use_batch_settings(1)
    assert not decode.seed_fixed.isChecked()


def test_restore_shows_the_variants_and_the_history_names_the_model(make_window: MakeWindow, qtbot: QtBot) -> None:
    window = make_window()
    _generate(window, qtbot)
    window.side_tabs.setCurrentIndex(1)  # the writer is on the History tab
    window.history_list.setCurrentRow(0)
    window.restore_batch(0)
    assert window.side_tabs.currentWidget() is window.variants
    label = window.history_list.item(0).text()
    assert label.endswith(" · Continue · tiny · 3 variants")
    batch = window.tabs.current().history.batches[0]
    assert Batch.from_json(batch.to_json()).model == "tiny"
    old = batch.to_json()
    del old["model"]  # kept before batches named their model
    assert "tiny" not in Batch.from_json(old).label()


class TwoLmEngine(FakeEngine):
    """Two Continue models; load() returns the one asked for."""

    def __init__(self, folder: Path) -> None:
        first = BundleInfo(folder / "first", "first", "softmax", "An LM.", tasks=("continue",))
        second = BundleInfo(folder / "second", "second", "softmax", "Another LM.", tasks=("continue",))
        super().__init__(bundles=[first, second])
        self.models = {"first": FakeModel(writes("continue")), "second": FakeModel(writes("continue"))}

    def load(self, path: Path, device: str = "auto", runtime: str = "auto") -> FakeModel:
        return self.models[Path(path).name]


def test_use_its_settings_loads_the_batchs_model(make_window: MakeWindow, qtbot: QtBot, tmp_path: Path) -> None:
    engine = TwoLmEngine(tmp_path)
    window = make_window(engine)
    assert window.model is engine.models["first"]
    _generate(window, qtbot)
    window.load_bundle(tmp_path / "second")
    qtbot.waitUntil(lambda: window.model is engine.models["second"], timeout=5000)
    window.use_batch_settings(0)
    qtbot.waitUntil(lambda: window.model is engine.models["first"], timeout=5000)
    assert window.controls.model.picker.currentText() == "first"
