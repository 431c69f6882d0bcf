"""Debounced autosave of every open document into this run's AutosaveSession (Qt side).

A document is written `DEBOUNCE_MS` after the writer stops typing, and at least every `MAX_DELAY_S`
while they keep typing. Unmodified documents (just saved, or never changed) have no autosave file.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, QTimer

from app.editor.document import DocumentEditor
from app.persistence.autosave import AutosaveSession, SavedDocument

DEBOUNCE_MS = 1000
MAX_DELAY_S = 10.0


class Autosaver(QObject):
    """Call `touch(editor)` on every change; `flush()` writes now; `forget(editor)` after save/close."""

    def __init__(self, session: AutosaveSession, on_error: Callable[[str], None], parent: QObject | None = None,
                 debounce_ms: int = DEBOUNCE_MS) -> None:
        super().__init__(parent)
        self.session = session
        self._on_error = on_error
        self._dirty: dict[str, DocumentEditor] = {}
        self._older: dict[str, Path] = {}  # doc_id → a crashed session's autosave still holding its text
        self._first_dirty = 0.0
        self._timer = QTimer(self, singleShot=True, interval=debounce_ms)
        self._timer.timeout.connect(self.flush)

    def touch(self, editor: DocumentEditor) -> None:
        if not self._dirty:
            self._first_dirty = time.monotonic()
        self._dirty[editor.doc_id] = editor
        if time.monotonic() - self._first_dirty > MAX_DELAY_S:
            self.flush()
        else:
            self._timer.start()  # restart = debounce

    def adopt(self, editor: DocumentEditor, older: Path) -> None:
        """A recovered document whose old autosave must stay until this session has written (or the
        writer saved or closed) the document."""
        self._older[editor.doc_id] = older
        self.touch(editor)

    def _release(self, editor: DocumentEditor) -> None:
        older = self._older.pop(editor.doc_id, None)
        if older is not None:
            self._delete(older, editor)

    def _delete(self, file: Path, editor: DocumentEditor) -> None:
        """Delete an autosave no longer needed; one that cannot be deleted (a read-only data folder) is
        named and kept, and offered again at the next start: nothing is lost."""
        try:
            file.unlink(missing_ok=True)
        except OSError as error:
            self._on_error(f"Could not delete the autosave of {editor.title} ({error.strerror or error}): "
                           f"{file} is kept and will be offered again at the next start.")

    def flush(self) -> None:
        self._timer.stop()
        dirty, self._dirty = self._dirty, {}
        for editor in dirty.values():
            try:
                if editor.modified:
                    self.session.write(saved_document(editor))
                else:
                    self._delete(self.session.file(editor.doc_id), editor)
                self._release(editor)
            except OSError as error:
                self._on_error(f"Autosave failed for {editor.title}: {error}")
            except RuntimeError:
                continue  # the editor was closed and deleted meanwhile

    def forget(self, editor: DocumentEditor) -> None:
        """Saved or closed: its autosaves are no longer needed."""
        self._dirty.pop(editor.doc_id, None)
        self._delete(self.session.file(editor.doc_id), editor)
        self._release(editor)


def saved_document(editor: DocumentEditor) -> SavedDocument:
    """What an autosave keeps of a document: text, file, encoding, and the generation history of a
    document without a file (a saved file's history is in the history store, kept current per batch,
    so the autosave written while typing stays small)."""
    history = editor.history.to_json() if editor.path is None else []
    return SavedDocument(editor.doc_id, editor.title, str(editor.path or ""), editor.file_text(), time.time(),
                         editor.encoding, history)
