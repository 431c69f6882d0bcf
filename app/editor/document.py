"""One open document: a plain-text editor that knows its file, its autosave id and its history."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

from PySide6.QtGui import QTextCursor, QTextDocument
from PySide6.QtWidgets import QPlainTextEdit, QWidget

from app.editor.history import History
from app.editor.text_file import LINE_BREAK, UTF8, describe, file_text, write_text_file

WORD = re.compile(r"\b[\w'’-]+\b")
FILE_TYPES = (".txt", ".md")


def paragraph_words(text: str) -> list[int]:
    """The words of each paragraph the editor shows for the file text `text` (any thread may count them)."""
    return [len(WORD.findall(line)) for line in LINE_BREAK.split(text)]


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
        # words per paragraph (block), kept current as the text changes, so counting the words of a long
        # document after each pause in typing costs one paragraph, not the whole text
        self._block_words: list[int] = [0]
        self._replacing = False  # setPlainText: the counts are set afterwards, in one go
        self.document().contentsChange.connect(self._recount)
        self.setAccessibleName("Document text")
        self.setUndoRedoEnabled(True)

    @property
    def title(self) -> str:
        return self.path.name if self.path else f"Untitled {self.untitled_number}"

    @property
    def modified(self) -> bool:
        return self.document().isModified()

    def load_text(self, text: str, encoding: str, block_words: list[int] | None = None) -> None:
        """Show `text` (as a file holds it, in `encoding`) as this document's unmodified content; `block_words`
        are its `paragraph_words`, when they were counted already (off the UI thread, for a large file)."""
        self.original, self.encoding = text, encoding
        self._replacing = True
        try:
            self.setPlainText(text)
        finally:
            self._replacing = False
        if block_words is None or len(block_words) != self.document().blockCount():
            block_words = paragraph_words(text)
        self._block_words = block_words
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
        return sum(self._block_words)

    def _recount(self, position: int, removed: int, added: int) -> None:
        """Recount the paragraphs a change touched: those now between `position` and `position + added`,
        which replace as many old ones as the change did not add or remove."""
        if self._replacing:
            return
        document = self.document()
        first = document.findBlock(position)
        last = document.findBlock(position + added)
        if not last.isValid():
            last = document.lastBlock()
        counts = []
        block = first
        while block.isValid() and block.blockNumber() <= last.blockNumber():
            counts.append(len(WORD.findall(block.text())))
            block = block.next()
        old_span = len(counts) - (document.blockCount() - len(self._block_words))
        start = first.blockNumber()
        self._block_words[start:start + old_span] = counts

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
