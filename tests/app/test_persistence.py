"""Safety of work: autosave + recovery after SIGKILL of a real app process, atomic writes, corrupt
settings, corrupt or missing bundles."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from pytestqt.qtbot import QtBot

from app.paths import AppPaths
from app.persistence.autosave import AutosaveSession, SavedDocument, recoverable_documents
from app.persistence.settings import AppSettings, load_settings, save_settings
from engine.files.atomic_writes import write_text_atomic
from engine.front_door import BundleInfo, Engine
from tests.app.conftest import MakeWindow, leave_as_crashed
from tests.app.fakes import FakeEngine

ROOT = Path(__file__).resolve().parents[2]


def test_autosave_and_recovery_survive_sigkill(make_window: MakeWindow, home: AppPaths, qtbot: QtBot) -> None:
    text = "Chapter one. It began with a lie"
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(ROOT)}
    home_dir = home.data_dir.parent
    process = subprocess.Popen([sys.executable, "-m", "tests.app.crash_driver", str(home_dir), text], cwd=ROOT,
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "READY"
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
    assert process.returncode == -signal.SIGKILL
    window = make_window(wait_model=False, load_model=False)
    assert window.messages.kind == "offer" and "did not close properly" in window.messages.label.text()
    window.messages.button("Recover").click()
    editors = window.tabs.editors()
    assert [e.toPlainText() for e in editors] == [text]
    assert editors[0].modified  # not on disk yet: the writer is reminded to save
    assert recoverable_documents(home.autosave_dir, window.autosave_session.directory) == []
    # the recovered text is now protected by this session's autosave
    assert json.loads(next(window.autosave_session.directory.glob("[!s]*.json")).read_text())["text"] == text


def test_clean_exit_leaves_nothing_to_recover(make_window: MakeWindow, home: AppPaths, qtbot: QtBot) -> None:
    window = make_window(load_model=False, wait_model=False, autosave_ms=10)
    window.tabs.current().insertPlainText("unsaved words")
    qtbot.waitUntil(lambda: len(list(window.autosave_session.directory.glob("*.json"))) == 2, timeout=2000)
    window.close()  # ask_unsaved → discard
    assert recoverable_documents(home.autosave_dir) == []
    assert not window.autosave_session.directory.exists()


def test_saved_document_has_no_autosave(make_window: MakeWindow, qtbot: QtBot, tmp_path: Path) -> None:
    window = make_window(load_model=False, wait_model=False, autosave_ms=10)
    window.tabs.current().insertPlainText("draft")
    files = lambda: [p for p in window.autosave_session.directory.glob("*.json") if p.name != "session.json"]  # noqa: E731
    qtbot.waitUntil(lambda: len(files()) == 1, timeout=2000)
    window.save_current(tmp_path / "draft.txt")
    assert files() == []


def test_orphan_from_dead_pid_is_recoverable_live_one_is_not(tmp_path: Path) -> None:
    live = AutosaveSession(tmp_path)
    live.write(SavedDocument("a", "Untitled 1", "", "mine", 1.0))
    dead = AutosaveSession(tmp_path)
    dead.write(SavedDocument("b", "notes.txt", "/x/notes.txt", "theirs", 2.0))
    leave_as_crashed(dead.directory)
    found = recoverable_documents(tmp_path)
    assert [(d.text, d.path) for d in found] == [("theirs", "/x/notes.txt")]


def test_atomic_write_keeps_old_file_when_write_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "doc.txt"
    write_text_atomic(target, "old")

    def disk_full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)  # fails after the new text was written to the temp file
    with pytest.raises(OSError, match="No space"):
        write_text_atomic(target, "new")
    assert target.read_text() == "old" and list(tmp_path.iterdir()) == [target]  # temp file cleaned up


def test_corrupt_settings_fall_back_to_defaults_with_notice(make_window: MakeWindow, home: AppPaths) -> None:
    home.config_dir.mkdir(parents=True)
    home.settings_file.write_text("{not json")
    window = make_window()
    assert window.settings.theme == "light" and window.settings.font_size == AppSettings().font_size
    assert window.messages.kind == "error" and "settings could not be read" in window.messages.label.text()
    assert (home.config_dir / "settings.corrupt.json").read_text() == "{not json"


def test_settings_round_trip_and_wrong_types(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    settings = AppSettings(theme="dark", font_size=15, recent_files=["/a.txt"], controls={"temperature": 0.5})
    save_settings(path, settings)
    assert load_settings(path) == (settings, "")
    path.write_text(json.dumps({"theme": "purple"}))
    loaded, notice = load_settings(path)
    assert loaded == AppSettings() and "theme must be one of" in notice


def test_settings_persist_across_runs(make_window: MakeWindow, home: AppPaths) -> None:
    window = make_window()
    window.set_font_size(16)
    window.dark_action.trigger()
    window.controls.decode.set_values({"temperature": 0.4})
    window.close()
    settings, notice = load_settings(home.settings_file)
    assert notice == "" and settings.theme == "dark" and settings.font_size == 16
    assert settings.controls["temperature"] == 0.4
    again = make_window()
    assert again.controls.decode.values()["temperature"] == 0.4 and again.dark_action.isChecked()


def test_no_bundle_found_message(make_window: MakeWindow) -> None:
    window = make_window(FakeEngine(bundles=[]), wait_model=False)
    assert window.messages.kind == "error" and "No model found" in window.messages.label.text()
    assert not window.generate() and "No model is loaded" in window.messages.label.text()


def test_corrupt_bundle_paths(make_window: MakeWindow, qtbot: QtBot, tmp_path: Path, tiny_bundle: Path) -> None:
    models = tmp_path / "models"
    broken_config = models / "broken-config"
    broken_config.mkdir(parents=True)
    (broken_config / "config.json").write_text("{oops")
    no_weights = models / "no-weights"
    no_weights.mkdir()
    for file in tiny_bundle.iterdir():
        if file.name != "model.safetensors":
            (no_weights / file.name).write_bytes(file.read_bytes())
    engine = Engine(search_dirs=[models])
    window = make_window(engine, wait_model=False)
    infos = window.controls.model.bundles
    assert [i.name for i in infos] == ["broken-config", "no-weights"]
    assert infos[0].error and not infos[1].error
    qtbot.waitUntil(lambda: "Could not load the model no-weights" in window.messages.label.text(), timeout=10_000)
    assert window.model is None
    window.controls.model._on_pick(0)
    assert "broken-config cannot be used" in window.controls.model.status.text()


def test_load_failure_from_engine_is_reported(make_window: MakeWindow, qtbot: QtBot) -> None:
    engine = FakeEngine(bundles=[BundleInfo(Path("/x/bad"), "bad", "softmax", "")], load_error="weights corrupt")
    window = make_window(engine, wait_model=False)
    qtbot.waitUntil(lambda: "weights corrupt" in window.messages.label.text(), timeout=5000)


def test_installed_qt_keeps_references_to_none_and_true(qapp: object) -> None:
    """PySide6 6.12.0 on CPython 3.11 drops a reference to None per void Qt call and to True per
    emit, aborting long sessions ("none_dealloc"); pyproject.toml excludes it. Guards the pin."""
    import sys

    from PySide6.QtCore import QObject, QTimer, Signal

    class Probe(QObject):
        fired = Signal()

    timer, probe = QTimer(), Probe()
    none_before, true_before = sys.getrefcount(None), sys.getrefcount(True)
    for _ in range(1000):
        timer.setInterval(5)
        probe.fired.emit()
    assert sys.getrefcount(None) > none_before - 500
    assert sys.getrefcount(True) > true_before - 500
