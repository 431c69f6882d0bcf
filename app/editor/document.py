"""One open document: a plain-text editor that knows its file, its autosave id and its history."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

from PySide6.QtGui import QTextCursor, QTextDocument
from PySide6.QtWidgets import QPlainTextEdit, QWidget

from app.editor.history import History
from app.editor.text_file import UTF8, describe, file_text, write_text_file

WORD = re.compile(r"\b[\w'’-]+\b")
FILE_TYPES = (".txt", ".md")


class DocumentEditor(QPlainTextEdit):
    """The writer's text. Variant insertion and replacement are each exactly one undo step."""

    def __init__(self, untitled_number: int = 1, path: Path | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.doc_id = uuid.uuid4().hex
        self.path = path
        self.untitled_number = untitled_number
        self.history = History()
        self.encoding = UTF8  # what the file was read in; saving writes it back the same way
        self.original = ""  # the text as the file holds it (line breaks, a leading U+FEFF), as last read or saved
        self.setAccessibleName("Document text")
        self.setUndoRedoEnabled(True)

    @property
    def title(self) -> str:
        return self.path.name if self.path else f"Untitled {self.untitled_number}"

    @property
    def modified(self) -> bool:
        return self.document().isModified()

    def load_text(self, text: str, encoding: str) -> None:
        """Show `text` (as a file holds it, in `encoding`) as this document's unmodified content."""
        self.original, self.encoding = text, encoding
        self.setPlainText(text)
        self.document().setModified(False)

    def file_text(self) -> str:
        """The text as its file should hold it: `toPlainText` turns every line break into LF and
        non-breaking spaces into spaces; this keeps both (app/editor/text_file.py)."""
        return file_text(self.document().toRawText(), self.original)

    def save_file(self, path: Path) -> str:
        """Write the text in this document's encoding (UTF-8 when it no longer fits); return the old
        encoding's name when the file had to change to UTF-8, else ""."""
        text = self.file_text()
        used = write_text_file(path, text, self.encoding)
        changed = describe(self.encoding) if used != self.encoding else ""
        self.path, self.encoding, self.original = path, used, text
        self.document().setModified(False)
        return changed

    def text_before_cursor(self) -> str:
        return self.toPlainText()[: self.textCursor().position()]

    def selection_text(self) -> str:
        # Qt uses U+2029 between paragraphs inside a selection
        return self.textCursor().selectedText().replace("\u2029", "\n")

    def insert_variant(self, text: str) -> None:
        """Insert at the cursor (over any selection) as one undo step."""
        cursor = self.textCursor()
        cursor.beginEditBlock()
        cursor.insertText(text)
        cursor.endEditBlock()
        self.setTextCursor(cursor)

    def replace_selection(self, text: str) -> bool:
        """Replace the selection as one undo step; False when nothing is selected."""
        if not self.textCursor().hasSelection():
            return False
        self.insert_variant(text)
        return True

    def word_count(self) -> int:
        return len(WORD.findall(self.toPlainText()))

    def find_text(self, needle: str, backward: bool = False, case: bool = False) -> bool:
        """Find the next (or previous) match, wrapping around; select it."""
        flags = QTextDocument.FindFlag(0)
        if backward:
            flags |= QTextDocument.FindFlag.FindBackward
        if case:
            flags |= QTextDocument.FindFlag.FindCaseSensitively
        if not needle:
            return False
        if self.find(needle, flags):
            return True
        cursor = self.textCursor()
        cursor.movePosition(QTextCursor.MoveOperation.End if backward else QTextCursor.MoveOperation.Start)
        self.setTextCursor(cursor)
        return self.find(needle, flags)
