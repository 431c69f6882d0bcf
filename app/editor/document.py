"""One open document: a plain-text editor that knows its file, its autosave id and its history."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

from PySide6.QtGui import QTextCursor, QTextDocument
from PySide6.QtWidgets import QPlainTextDocumentLayout, QPlainTextEdit, QWidget

from app.editor.history import History
from app.editor.text_file import LINE_BREAK, UTF8, describe, file_text, write_text_file

WORD = re.compile(r"\b[\w'’-]+\b")
FILE_TYPES = (".txt", ".md")
COUNT_PIECE = 2**16  # characters split at once when counting a text's paragraphs


def paragraph_words(text: str) -> list[int]:
    """The words of each paragraph the editor shows for the file text `text`. A thread counting a long text
    splits it a piece at a time (each piece ends after an LF, so no CRLF is cut in two): one split of the
    whole text would hold Python's lock, and so the UI thread, for seconds."""
    counts: list[int] = []
    start = 0
    while True:
        cut = text.find("\n", start + COUNT_PIECE)
        end = len(text) if cut < 0 else cut + 1
        lines = LINE_BREAK.split(text[start:end])
        if end < len(text):
            lines.pop()  # "": the paragraph after the piece's last break begins in the next piece
        counts += [len(WORD.findall(line)) for line in lines]
        if end >= len(text):
            return counts
        start = end


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

    def load_text(self, text: str, encoding: str, block_words: list[int] | None = None,
                  built: QTextDocument | None = None) -> None:
        """Show `text` (as a file holds it, in `encoding`) as this document's unmodified content. For a large
        file, `block_words` are its `paragraph_words`, counted off the UI thread, and `built` is the document
        already made of it (app/editor/building.py)."""
        self.original, self.encoding = text, encoding
        self._replacing = True
        try:
            if built is None:
                self.setPlainText(text)
            else:
                self._take(built)
        finally:
            self._replacing = False
        if block_words is None or len(block_words) != self.document().blockCount():
            block_words = paragraph_words(text)
        self._block_words = block_words
        self.document().setModified(False)

    def _take(self, document: QTextDocument) -> None:
        """Show `document` instead of the editor's own (which Qt deletes, with its connections)."""
        document.setParent(self)
        document.setDocumentLayout(QPlainTextDocumentLayout(document))
        document.setDefaultFont(self.font())  # as the editor's own document has it
        self.setDocument(document)
        document.contentsChange.connect(self._recount)

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
