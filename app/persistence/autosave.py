"""Autosave files and crash recovery, without Qt.

Each running app owns a session folder `autosave/<session>/` holding `session.json` (its pid) and
one `<doc_id>.json` per open document with unsaved changes. A clean exit deletes the folder. A
folder whose pid is no longer running belongs to an app that crashed or was killed: its documents
are offered for recovery at the next start. Every file is written atomically.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

from app.persistence.atomic import write_text_atomic

SESSION_FILE = "session.json"


@dataclass(frozen=True)
class SavedDocument:
    """One autosaved document: its text and where it belongs."""

    doc_id: str
    title: str
    path: str  # "" for a document never saved
    text: str
    saved_at: float


def pid_alive(pid: int) -> bool:
    """True when a process with this pid exists (signal 0 checks without sending anything)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class AutosaveSession:
    """This app run's autosave folder."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.directory = root / f"{int(time.time())}-{uuid.uuid4().hex[:8]}"
        self.directory.mkdir(parents=True, exist_ok=True)
        write_text_atomic(self.directory / SESSION_FILE, json.dumps({"pid": os.getpid(), "started": time.time()}))

    def write(self, doc_id: str, title: str, path: str, text: str) -> None:
        record = SavedDocument(doc_id, title, path, text, time.time())
        write_text_atomic(self.directory / f"{doc_id}.json", json.dumps(asdict(record)))

    def remove(self, doc_id: str) -> None:
        (self.directory / f"{doc_id}.json").unlink(missing_ok=True)

    def close(self) -> None:
        """Clean exit: nothing left to recover."""
        shutil.rmtree(self.directory, ignore_errors=True)


def _session_pid(directory: Path) -> int:
    try:
        return int(json.loads((directory / SESSION_FILE).read_text())["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return -1  # unreadable lock: treat the session as dead so its text is still offered


def orphaned_sessions(root: Path, own: Path | None = None) -> list[Path]:
    """Session folders left by apps that are no longer running."""
    if not root.is_dir():
        return []
    return sorted(
        d for d in root.iterdir() if d.is_dir() and d != own and not pid_alive(_session_pid(d))
    )


def recoverable_documents(root: Path, own: Path | None = None) -> list[SavedDocument]:
    """Every readable autosaved document of crashed sessions, newest first."""
    found: list[SavedDocument] = []
    for session in orphaned_sessions(root, own):
        for file in session.glob("*.json"):
            if file.name == SESSION_FILE:
                continue
            try:
                found.append(SavedDocument(**json.loads(file.read_text(encoding="utf-8"))))
            except (OSError, ValueError, TypeError):
                continue  # a damaged autosave cannot be offered; the atomic writes make this rare
    return sorted(found, key=lambda d: d.saved_at, reverse=True)


def discard_orphans(root: Path, own: Path | None = None) -> None:
    for session in orphaned_sessions(root, own):
        shutil.rmtree(session, ignore_errors=True)
