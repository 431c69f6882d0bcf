"""Putting a long text into a text document a piece at a time, between the UI's events.

`QPlainTextEdit.setPlainText` of an 80 MB file holds the UI thread for seconds (Qt builds the document in
one call, and it must be built on the thread that shows it). `DocumentBuilder` inserts the text into a
document of its own in pieces of `PIECE` characters, one piece per turn of the event loop, so the window
keeps answering; the finished document is then handed to an editor (`DocumentEditor.load_text`). Inserting
text through a cursor is what `setPlainText` does, so the document is the same; a piece never ends between
the CR and LF of a CRLF, which the cursor reads as one line break only when they arrive together.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtGui import QTextCursor, QTextDocument

PIECE = 2**20  # characters per turn of the event loop: about 0.1 s on a busy 2-core machine


class DocumentBuilder(QObject):
    """Builds `document` from `text` while the event loop runs; `built(document)` when done."""

    built = Signal(object)  # QTextDocument

    def __init__(self, text: str, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.document = QTextDocument(self)  # the editor that takes it becomes its parent
        self.document.setUndoRedoEnabled(False)  # loading is not an edit the writer could undo
        self._cursor = QTextCursor(self.document)
        self._text = text
        self._start = 0
        self._timer = QTimer(self, interval=0)
        self._timer.timeout.connect(self._insert_piece)

    def start(self) -> None:
        self._timer.start()

    def _insert_piece(self) -> None:
        end = min(self._start + PIECE, len(self._text))
        if end < len(self._text) and self._text[end - 1] == "\r":
            end += 1  # keep a CRLF's LF with its CR
        self._cursor.insertText(self._text[self._start:end])
        self._start = end
        if self._start >= len(self._text):
            self._timer.stop()
            self.document.setUndoRedoEnabled(True)
            self.built.emit(self.document)
