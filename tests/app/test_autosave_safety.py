"""Autosave safety: a crashed session is told from a live one by its lock (not its pid), unsaved text is
private, a read-only data folder loses nothing, and messages show names as typed."""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from app.paths import AppPaths
from app.persistence.autosave import LOCK_FILE, SESSION_FILE, AutosaveSession, SavedDocument, recoverable_documents
from tests.app.conftest import MakeWindow

AUTOSAVE = {"doc_id": "d1", "title": "Untitled 1", "path": "", "text": "my chapter", "saved_at": 1.0}


def _crashed_session(root: Path, pid: int, title: str = "Untitled 1") -> Path:
    """A session folder whose app died: its lock file is there, nobody holds it."""
    session = root / "1-crashed"
    session.mkdir(parents=True)
    (session / SESSION_FILE).write_text(json.dumps({"pid": pid}))
    (session / LOCK_FILE).touch()
    (session / "d1.json").write_text(json.dumps({**AUTOSAVE, "title": title}))
    return session


def test_a_crashed_session_whose_pid_now_runs_another_process_is_offered(tmp_path: Path) -> None:
    _crashed_session(tmp_path, os.getppid())  # the pid was reused by a live process
    live = AutosaveSession(tmp_path)
    live.write(SavedDocument("d2", "Untitled 2", "", "still being typed", 2.0))
    assert [d.text for d in recoverable_documents(tmp_path)] == ["my chapter"]
    live.close()
    assert not live.directory.exists()


def test_autosaves_are_private_to_the_writer(tmp_path: Path) -> None:
    session = AutosaveSession(tmp_path)
    session.write(SavedDocument("d1", "Untitled 1", "", "secret draft", 1.0))
    assert stat.S_IMODE(session.directory.stat().st_mode) == 0o700
    assert {p.name: stat.S_IMODE(p.stat().st_mode) for p in session.directory.iterdir()} == {
        "d1.json": 0o600, SESSION_FILE: 0o600, LOCK_FILE: 0o600}


def _read_only_autosaves(monkeypatch: pytest.MonkeyPatch, root: Path) -> None:
    """Creating or deleting under `root` fails as in a read-only folder (tests may run as root, whom
    chmod does not stop)."""
    def refusing(real: Any) -> Any:
        def refuse(path: Path, *args: object, **kwargs: object) -> None:
            if path.is_relative_to(root):
                raise PermissionError(errno.EACCES, "Permission denied", str(path))
            real(path, *args, **kwargs)
        return refuse

    monkeypatch.setattr(Path, "unlink", refusing(Path.unlink))
    monkeypatch.setattr(Path, "mkdir", refusing(Path.mkdir))


def test_discard_on_a_read_only_data_folder_keeps_the_text_and_says_so(
        make_window: MakeWindow, home: AppPaths, monkeypatch: pytest.MonkeyPatch) -> None:
    session = _crashed_session(home.autosave_dir, -1)
    _read_only_autosaves(monkeypatch, home.autosave_dir)
    window = make_window(load_model=False, wait_model=False)
    window.messages.button("Discard").click()
    assert window.messages.kind == "error"
    assert "Could not delete 1 old autosave file(s)" in window.messages.label.text()
    assert "Permission denied" in window.messages.label.text() and (session / "d1.json").exists()


def test_closing_a_recovered_document_on_a_read_only_data_folder(
        make_window: MakeWindow, home: AppPaths, monkeypatch: pytest.MonkeyPatch) -> None:
    session = _crashed_session(home.autosave_dir, -1)
    _read_only_autosaves(monkeypatch, home.autosave_dir)
    window = make_window(load_model=False, wait_model=False)
    assert "Autosave is off" in window.messages.label.text()
    (editor,) = window.recover_documents()
    assert "Could not autosave 1 of them again, so their old autosave is kept" in window.messages.label.text()
    assert window.close_tab(window.tabs.indexOf(editor))  # ask_unsaved → discard
    text = window.messages.label.text()
    assert "Could not delete the autosave of Untitled 2 (Permission denied)" in text
    assert f"{session / 'd1.json'} is kept and will be offered again at the next start" in text
    assert (session / "d1.json").exists()


def test_message_bar_shows_titles_as_plain_text(make_window: MakeWindow, home: AppPaths) -> None:
    title = "<b>bold</b><img src=x>"
    _crashed_session(home.autosave_dir, -1, title)
    window = make_window(load_model=False, wait_model=False)
    label = window.messages.label
    assert title in label.text() and label.textFormat() == label.textFormat().PlainText
