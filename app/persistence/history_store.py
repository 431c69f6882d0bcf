"""Generation history of saved documents, kept in the data dir (`history/<key>.json`), one file per path.

The writer's own folder stays clean (no sidecar files); the key is a hash of the file's absolute
path, and the file records that path so a hash collision can never show another file's history.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from app.editor.history import History
from engine.files.atomic_writes import write_text_atomic


class HistoryStore:
    """`load(path)` / `save(path, history)` for documents that have a file."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def file_for(self, document: Path) -> Path:
        key = hashlib.sha256(str(document).encode("utf-8", "surrogateescape")).hexdigest()[:24]
        return self.directory / f"{key}.json"

    def load(self, document: Path) -> tuple[History, str]:
        """The document's history (empty when none) and a notice when its file could not be read."""
        file = self.file_for(document)
        if not file.exists():
            return History(), ""
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
            if not isinstance(data, dict) or data.get("path") != str(document):
                return History(), ""
            history, skipped = History.from_json(data.get("batches"))
        except (OSError, ValueError, RecursionError) as error:
            return History(), f"The generation history of {document.name} could not be read ({error})."
        note = f"{skipped} unreadable batch(es) of {document.name}'s history were skipped." if skipped else ""
        return history, note

    def save(self, document: Path, history: History) -> None:
        """Write the history (raises OSError); an empty history removes the file."""
        file = self.file_for(document)
        if not history.batches:
            file.unlink(missing_ok=True)
            return
        write_text_atomic(file, json.dumps({"path": str(document), "batches": history.to_json()}))
