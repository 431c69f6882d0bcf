"""The runtime setting (auto / PyTorch / ONNX Runtime): remembered, passed to the engine, its fallback shown."""

from __future__ import annotations

from pathlib import Path

from pytestqt.qtbot import QtBot

from app.paths import AppPaths
from app.persistence.settings import AppSettings, load_settings, save_settings
from tests.app.conftest import MakeWindow
from tests.app.fakes import FakeEngine, FakeModel


class RecordingEngine(FakeEngine):
    """Remembers the runtime each load asked for; its model reports an ONNX fallback."""

    def __init__(self) -> None:
        super().__init__()
        self.runtimes: list[str] = []
        self.model.runtime_note = "ONNX Runtime not used, decoding with torch: the export is damaged"

    def load(self, path: Path, device: str = "auto", runtime: str = "auto") -> FakeModel:
        self.runtimes.append(runtime)
        return super().load(path, device, runtime)


def test_runtime_is_saved_and_a_bad_one_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    save_settings(path, AppSettings(runtime="onnx"))
    assert load_settings(path)[0].runtime == "onnx"
    path.write_text('{"runtime": "tensorrt"}')
    settings, notice = load_settings(path)
    assert settings.runtime == "auto" and "runtime" in notice


def test_picking_a_runtime_reloads_with_it_and_shows_the_fallback(
    make_window: MakeWindow, qtbot: QtBot, home: AppPaths
) -> None:
    engine = RecordingEngine()
    window = make_window(engine)
    assert engine.runtimes == ["auto"]
    assert "faster version could not be used" in window.messages.label.text()
    assert "export is damaged" in window.messages.label.toolTip()  # the engine's reason, for whoever looks
    box = window.controls.model
    box.runtime.setCurrentIndex(box.runtime.findData("onnx"))
    box.runtime.activated.emit(box.runtime.currentIndex())
    qtbot.waitUntil(lambda: len(engine.runtimes) == 2, timeout=10_000)
    assert engine.runtimes[-1] == "onnx" and window.settings.runtime == "onnx"
