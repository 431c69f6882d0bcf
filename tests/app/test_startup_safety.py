"""Nothing lost, nothing crashes: autosaves are deleted only once safe, odd files are skipped and named,
settings are saved on every change, and the app starts on a full or read-only disk and with bad files."""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
import tempfile
from pathlib import Path

import pytest
from pytestqt.qtbot import QtBot

from app.paths import AppPaths
from app.persistence.autosave import SESSION_FILE
from app.persistence.settings import AppSettings, load_settings
from engine.files.atomic_writes import write_text_atomic
from engine.front_door import Engine
from tests.app.conftest import MakeWindow

DEAD_PID = 2**22 + 12345  # no such process
DEEP = "[" * 100_000 + "]" * 100_000  # parses only with unbounded recursion


def _crashed_session(home: AppPaths, files: dict[str, str]) -> Path:
    """An autosave folder left by a crashed app, holding these file names → contents."""
    session = home.autosave_dir / "1-crashed"
    session.mkdir(parents=True)
    (session / SESSION_FILE).write_text(json.dumps({"pid": DEAD_PID}))
    for name, content in files.items():
        (session / name).write_text(content)
    return session


def _autosave(text: str, **extra: object) -> str:
    return json.dumps({"doc_id": "d1", "title": "Untitled 1", "path": "", "text": text, "saved_at": 1.0, **extra})


def _full_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", refuse)  # every atomic write fails after writing its temp file


def test_autosave_with_an_unknown_key_is_offered_not_deleted(make_window: MakeWindow, home: AppPaths) -> None:
    session = _crashed_session(home, {"d1.json": _autosave("my chapter", evil=1)})
    window = make_window(load_model=False, wait_model=False)
    assert window.messages.kind == "offer" and "Untitled 1" in window.messages.label.text()
    assert (session / "d1.json").exists()
    (editor,) = window.recover_documents()
    assert editor.toPlainText() == "my chapter" and not session.exists()


def test_unreadable_autosaves_are_named_and_kept(make_window: MakeWindow, home: AppPaths) -> None:
    session = _crashed_session(home, {"d1.json": _autosave("good"), "d2.json": _autosave("x", title=5),
                                      "d3.json": DEEP, "d4.json": "{torn"})
    window = make_window(load_model=False, wait_model=False)
    text = window.messages.label.text()
    assert window.messages.kind == "offer" and "3 unreadable autosave" in text
    assert all(name in text for name in ("d2.json", "d3.json", "d4.json")) and "title is not a string" in text
    window.messages.button("Discard").click()  # discards what was offered, nothing else
    assert sorted(p.name for p in session.iterdir()) == ["d2.json", "d3.json", "d4.json", SESSION_FILE]


def test_recovering_onto_a_full_disk_keeps_the_old_autosave(make_window: MakeWindow, home: AppPaths,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    session = _crashed_session(home, {"d1.json": _autosave("only copy")})
    window = make_window(load_model=False, wait_model=False)
    _full_disk(monkeypatch)
    window.messages.button("Recover").click()
    assert [e.toPlainText() for e in window.tabs.editors()] == ["only copy"]
    assert (session / "d1.json").exists()  # its text is nowhere else on disk
    text = window.messages.label.text()
    assert window.messages.kind == "error" and "Could not autosave 1" in text and "No space" in text
    monkeypatch.undo()  # space again: once this session holds the text, the old file goes
    window.autosaver.flush()
    assert not (session / "d1.json").exists()
    assert json.loads(next(window.autosave_session.directory.glob("[!s]*.json")).read_text())["text"] == "only copy"


def test_saving_a_preset_on_a_full_disk_says_so(make_window: MakeWindow, monkeypatch: pytest.MonkeyPatch) -> None:
    window = make_window(load_model=False, wait_model=False)
    messages: list[str] = []
    window.controls.preset_message.connect(messages.append)
    _full_disk(monkeypatch)
    window.controls.preset_picker.setCurrentText("mine")
    window.controls._save_clicked()  # the Save preset button
    assert messages and "presets could not be saved" in messages[-1] and "No space" in messages[-1]


def test_settings_are_saved_on_change_before_any_exit(make_window: MakeWindow, home: AppPaths,
                                                      qtbot: QtBot) -> None:
    window = make_window()
    window.set_font_size(17)
    window.controls.decode.set_values({"temperature": 0.3})
    saved = lambda: load_settings(home.settings_file)[0]  # noqa: E731
    qtbot.waitUntil(lambda: saved().font_size == 17 and saved().controls.get("temperature") == 0.3, timeout=5000)
    assert window.isVisible()  # no close needed: a crash now keeps them


@pytest.mark.parametrize("failure", ["read-only", "full"])
def test_app_starts_when_the_data_dir_cannot_be_written(make_window: MakeWindow, qtbot: QtBot,
                                                        monkeypatch: pytest.MonkeyPatch, failure: str) -> None:
    if failure == "full":
        _full_disk(monkeypatch)
    else:
        def read_only(*args: object, **kwargs: object) -> tuple[int, str]:
            raise OSError(errno.EROFS, "Read-only file system")

        monkeypatch.setattr(tempfile, "mkstemp", read_only)
    window = make_window(load_model=False, wait_model=False, autosave_ms=10)
    assert window.messages.kind == "error" and "Autosave is off" in window.messages.label.text()
    window.tabs.current().insertPlainText("still usable")
    qtbot.waitUntil(lambda: "Autosave failed for Untitled 1" in window.messages.label.text(), timeout=2000)
    window.set_font_size(15)
    qtbot.waitUntil(lambda: "settings could not be saved" in window.messages.label.text(), timeout=2000)


def test_bad_control_values_in_settings_are_skipped_and_named(make_window: MakeWindow, home: AppPaths) -> None:
    home.config_dir.mkdir(parents=True)
    controls = {"temperature": float("nan"), "top_k": "hot", "seed": 10**30, "n": 10**12, "top_p": 0.5,
                "seed_fixed": "yes", "pos_bias": {"nouns": float("inf")}}
    home.settings_file.write_text(json.dumps({"font_size": 14, "controls": controls}))
    window = make_window()
    text = window.messages.label.text()
    assert all(name in text for name in ("temperature", "top_k", "seed", "n", "seed_fixed", "pos_bias"))
    values = window.controls.decode.values()
    assert values["top_p"] == 0.5 and values["temperature"] == 1.0 and values["seed"] == 1234
    assert window.settings.font_size == 14


def test_deeply_nested_settings_presets_and_autosave_do_not_stop_the_app(make_window: MakeWindow,
                                                                          home: AppPaths) -> None:
    home.config_dir.mkdir(parents=True)
    home.settings_file.write_text(DEEP)
    home.presets_file.write_text(DEEP)
    _crashed_session(home, {"d1.json": DEEP})
    window = make_window()
    text = window.messages.label.text()
    assert "settings could not be read" in text and "Presets file" in text and "d1.json" in text
    assert (home.config_dir / "presets.corrupt.json").read_text() == DEEP  # a later save cannot overwrite it
    window.controls.save_preset("mine")
    assert (home.config_dir / "presets.corrupt.json").read_text() == DEEP


def test_corrupt_settings_backups_are_numbered(home: AppPaths) -> None:
    home.config_dir.mkdir(parents=True)
    for content in ("{first", "{second", "{third"):
        home.settings_file.write_text(content)
        assert load_settings(home.settings_file)[0] == AppSettings()
    backups = {p.name: p.read_text() for p in home.config_dir.glob("settings.corrupt*.json")}
    assert backups == {"settings.corrupt.json": "{first", "settings.corrupt-2.json": "{second",
                       "settings.corrupt-3.json": "{third"}


def test_atomic_write_keeps_the_mode_or_uses_the_umask(tmp_path: Path) -> None:
    kept = tmp_path / "settings.json"
    kept.write_text("{}")
    kept.chmod(0o644)
    write_text_atomic(kept, '{"theme": "dark"}')
    assert stat.S_IMODE(kept.stat().st_mode) == 0o644
    old_umask = os.umask(0o002)
    try:
        write_text_atomic(tmp_path / "new.json", "{}")
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE((tmp_path / "new.json").stat().st_mode) == 0o664


def test_malformed_bundle_is_skipped_and_named(make_window: MakeWindow, qtbot: QtBot, tmp_path: Path,
                                               tiny_bundle: Path) -> None:
    models = tmp_path / "models"
    shutil.copytree(tiny_bundle, models / "good")
    (models / "deep").mkdir()
    (models / "deep" / "config.json").write_text(DEEP)
    window = make_window(Engine(search_dirs=[models]))
    assert [b.name for b in window.controls.model.bundles] == ["deep", "good"]
    assert window.model is not None  # the good bundle loaded
    assert "Skipped unusable model folder" in window.messages.label.text()
    assert str(models / "deep") in window.messages.label.text()
