"""Autosave folders an older Variorum left (no lock file) are offered for recovery whatever process their
recorded pid names now; only a folder a starting app is still setting up is left alone."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from app.persistence.autosave import (
    SESSION_FILE,
    SETUP_GRACE_S,
    AutosaveSession,
    recoverable_documents,
    remove_empty_orphans,
)
from tests.app.conftest import MakeWindow

AUTOSAVE = {"doc_id": "d1", "title": "Chapter 3", "path": "", "text": "my chapter", "saved_at": 1.0}


def _pre_lock_session(root: Path, pid: int) -> Path:
    """A session folder as a Variorum from before session locks wrote it: the pid, no lock file."""
    session = root / "1-old"
    session.mkdir(parents=True)
    (session / SESSION_FILE).write_text(json.dumps({"pid": pid}))
    (session / "d1.json").write_text(json.dumps(AUTOSAVE))
    return session


def test_a_pre_lock_folder_whose_pid_is_alive_is_offered(tmp_path: Path) -> None:
    _pre_lock_session(tmp_path, os.getpid())  # a live pid: this very test process
    own = AutosaveSession(tmp_path)
    assert [d.text for d in recoverable_documents(tmp_path, own.directory)] == ["my chapter"]
    own.close()


def test_the_window_offers_and_recovers_it(make_window: MakeWindow, tmp_path: Path) -> None:
    window = make_window(load_model=False, wait_model=False)
    session = _pre_lock_session(window.paths.autosave_dir, os.getppid())
    window.offer_recovery([])
    assert window.messages.kind == "offer" and "Chapter 3" in window.messages.label.text()
    (editor,) = window.recover_documents()
    assert editor.toPlainText() == "my chapter" and not (session / "d1.json").exists()


def test_a_folder_still_being_set_up_is_left_alone(tmp_path: Path) -> None:
    starting = tmp_path / "2-starting"
    starting.mkdir()  # made by a starting app that has not created its lock yet
    remove_empty_orphans(tmp_path)
    assert starting.is_dir()
    old = time.time() - SETUP_GRACE_S - 60
    os.utime(starting, (old, old))  # an app that died before locking it: an empty orphan
    remove_empty_orphans(tmp_path)
    assert not starting.exists()
