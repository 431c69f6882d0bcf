"""Autosave files and crash recovery, without Qt.

Each running app owns a session folder `autosave/<session>/` (mode 0700) holding `session.lock`,
which the app keeps locked (`flock`) while it runs, `session.json` (its pid) and one `<doc_id>.json`
(mode 0600: unsaved text is private) per open document with unsaved changes. A clean exit deletes
the folder. A folder whose lock nobody holds belongs to an app that crashed or was killed (the
kernel drops the lock with the process), even when its recorded pid now belongs to another
process: its documents are offered for recovery at the next start. A folder without a lock file was
written by an older Variorum, which is not running any more once this one runs (or, rarely, runs
beside it): it is offered too, whatever process its recorded pid now names, since hiding it could
lose the text and offering it at worst shows the text twice. Only a folder a starting app has just
made, before it could create its lock, is left alone. Every file is written atomically.

An autosave file is deleted only once its text is safe elsewhere (recovered into this session's
autosave) or the writer explicitly discarded it; a file that cannot be read is left in place and
named, and unknown keys in a file are ignored.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from engine.files.atomic_writes import write_text_atomic

SESSION_FILE = "session.json"
LOCK_FILE = "session.lock"
PRIVATE_FILE_MODE = 0o600  # autosaves hold text the writer has not saved anywhere yet
PRIVATE_DIR_MODE = 0o700
SETUP_GRACE_S = 10.0  # a new session folder is locked within moments of being made


@dataclass(frozen=True)
class SavedDocument:
    """One autosaved document: its text, where it belongs, its encoding and generation history."""

    doc_id: str
    title: str
    path: str  # "" for a document never saved
    text: str
    saved_at: float
    encoding: str = "utf-8"
    history: list[Any] = field(default_factory=list, hash=False)  # History.to_json()

    @classmethod
    def from_json(cls, data: Any) -> SavedDocument:
        """Raise ValueError naming the first field with a wrong type; keys this app does not know are ignored."""
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        for name in ("doc_id", "title", "path", "text"):
            if not isinstance(data.get(name), str):
                raise ValueError(f"{name} is not a string")
        saved_at = data.get("saved_at", 0.0)
        encoding, history = data.get("encoding", "utf-8"), data.get("history", [])
        if isinstance(saved_at, bool) or not isinstance(saved_at, int | float):
            raise ValueError("saved_at is not a number")
        return cls(data["doc_id"], data["title"], data["path"], data["text"], float(saved_at),
                   encoding if _is_text_encoding(encoding) else "utf-8", history if isinstance(history, list) else [])


def _is_text_encoding(name: object) -> bool:
    """Whether `name` is a codec that turns text into bytes: not "rot13" (text to text) or "hex" (bytes to
    bytes), which a damaged or hand-edited autosave could name and saving would then fail on."""
    if not isinstance(name, str):
        return False
    try:
        "".encode(name)
        b"".decode(name)
    except LookupError:
        return False
    return True


@dataclass(frozen=True)
class FoundDocument:
    """A recoverable document and the autosave file it came from."""

    file: Path
    document: SavedDocument


@dataclass
class Recovery:
    """What crashed sessions left: readable documents (newest first) and unreadable files with the reason."""

    documents: list[FoundDocument] = field(default_factory=list)
    damaged: list[tuple[Path, str]] = field(default_factory=list)

    def damaged_notice(self) -> str:
        if not self.damaged:
            return ""
        named = "; ".join(f"{file} ({reason})" for file, reason in self.damaged[:3])
        more = f" and {len(self.damaged) - 3} more" if len(self.damaged) > 3 else ""
        return f"Skipped {len(self.damaged)} unreadable autosave file(s), left in place: {named}{more}."


class AutosaveSession:
    """This app run's autosave folder. When it cannot be created (read-only or full disk) the app
    still starts: `notice` says why, and every later `write` tries again."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.directory = root / f"{int(time.time())}-{uuid.uuid4().hex[:8]}"
        self.notice = ""
        self._lock: int | None = None  # the open, locked session.lock while this app runs
        try:
            self._start()
        except OSError as error:
            self.notice = f"Autosave is off for now: cannot write to {root} ({error.strerror or error})."

    def _start(self) -> None:
        if self._lock is None:
            self.directory.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)
            lock = os.open(self.directory / LOCK_FILE, os.O_RDWR | os.O_CREAT, PRIVATE_FILE_MODE)
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                write_text_atomic(self.directory / SESSION_FILE,
                                  json.dumps({"pid": os.getpid(), "started": time.time()}), mode=PRIVATE_FILE_MODE)
            except OSError:
                os.close(lock)
                raise
            self._lock = lock

    def write(self, document: SavedDocument) -> None:
        """Write one document's autosave (raises OSError when the disk refuses)."""
        self._start()
        write_text_atomic(self.file(document.doc_id), json.dumps(asdict(document)), mode=PRIVATE_FILE_MODE)

    def file(self, doc_id: str) -> Path:
        """Where this session autosaves the document `doc_id`."""
        return self.directory / f"{doc_id}.json"

    def close(self) -> None:
        """Clean exit: nothing left to recover."""
        shutil.rmtree(self.directory, ignore_errors=True)
        if self._lock is not None:
            os.close(self._lock)  # closing the descriptor releases the lock
            self._lock = None


def session_alive(directory: Path) -> bool:
    """Whether the app that owns this session folder still runs: its lock is held (pid reuse cannot fool
    this). A folder without a lock file is an older Variorum's (offered: the module docstring). A folder still
    being made (no session file yet, younger than `SETUP_GRACE_S`) counts as running."""
    try:
        lock = os.open(directory / LOCK_FILE, os.O_RDONLY)
    except FileNotFoundError:
        return _being_set_up(directory)
    except OSError:
        return False  # an unreadable lock: offer the text rather than hide it
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(lock)  # also releases the lock this check took
    return _being_set_up(directory)  # made and its lock file created, not locked yet


def _being_set_up(directory: Path) -> bool:
    """A folder `AutosaveSession` has made but not yet locked (it locks, then writes its session file, right
    after `mkdir`)."""
    try:
        return not (directory / SESSION_FILE).exists() and time.time() - directory.stat().st_mtime < SETUP_GRACE_S
    except OSError:
        return False


def orphaned_sessions(root: Path, own: Path | None = None) -> list[Path]:
    """Session folders left by apps that are no longer running."""
    try:
        folders = [d for d in root.iterdir() if d.is_dir() and d != own] if root.is_dir() else []
    except OSError:
        return []
    return sorted(d for d in folders if not session_alive(d))


def read_saved(file: Path) -> SavedDocument:
    """Raise OSError / ValueError / RecursionError when the file cannot be read as an autosave."""
    return SavedDocument.from_json(json.loads(file.read_text(encoding="utf-8")))


def find_recoverable(root: Path, own: Path | None = None) -> Recovery:
    """Every autosaved document of crashed sessions (newest first), and the files that could not be read."""
    recovery = Recovery()
    for session in orphaned_sessions(root, own):
        for file in sorted(session.glob("*.json")):
            if file.name == SESSION_FILE:
                continue
            try:
                recovery.documents.append(FoundDocument(file, read_saved(file)))
            except (OSError, ValueError, RecursionError) as error:
                recovery.damaged.append((file, str(error)[:120]))
    recovery.documents.sort(key=lambda found: found.document.saved_at, reverse=True)
    return recovery


def recoverable_documents(root: Path, own: Path | None = None) -> list[SavedDocument]:
    """The readable documents of `find_recoverable`, newest first."""
    return [found.document for found in find_recoverable(root, own).documents]


def forget_files(files: list[Path], root: Path, own: Path | None = None) -> list[tuple[Path, str]]:
    """Delete these autosave files (recovered or discarded), then every crashed session left with none.

    Returns the files that could not be deleted (a read-only data folder) with the reason; they stay
    where they are and are offered again at the next start."""
    kept = []
    for file in files:
        try:
            file.unlink(missing_ok=True)
        except OSError as error:
            kept.append((file, error.strerror or str(error)))
    remove_empty_orphans(root, own)
    return kept


def kept_notice(kept: list[tuple[Path, str]]) -> str:
    """What the writer reads when old autosaves could not be deleted ("" when all were)."""
    if not kept:
        return ""
    return (f"Could not delete {len(kept)} old autosave file(s) in {kept[0][0].parent} ({kept[0][1]}); "
            "they are kept and will be offered again at the next start.")


def remove_empty_orphans(root: Path, own: Path | None = None) -> None:
    """Delete crashed sessions' folders that hold nothing but their session and lock files."""
    for session in orphaned_sessions(root, own):
        try:
            if all(p.name in (SESSION_FILE, LOCK_FILE) for p in session.iterdir()):
                shutil.rmtree(session, ignore_errors=True)
        except OSError:
            continue
