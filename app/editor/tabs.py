"""Documents in tabs: new, open, save, save-as, close; titles show unsaved changes with a '•'."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtGui import QFont, QTextDocument
from PySide6.QtWidgets import QTabWidget, QWidget

from app.editor.document import FILE_TYPES, DocumentEditor
from app.editor.text_file import UTF8, TextFile, is_read_only, read_text_file


class DocumentError(ValueError):
    """A file cannot be opened or saved; the message is for the writer."""


def check_file_type(path: Path) -> None:
    """DocumentError unless `path` names a plain text or Markdown file."""
    if path.suffix.lower() not in FILE_TYPES:
        raise DocumentError(f"{path.name}: only plain text (.txt) and Markdown (.md) files can be opened.")


def read_document(path: Path) -> TextFile:
    """Read a writer's file to open it; any thread may call this (the window reads large files off the UI
    thread). DocumentError says why it cannot be opened: not .txt or .md, missing, unreadable, not a
    regular file (a FIFO, a device) or too large."""
    check_file_type(path)
    try:
        return read_text_file(path)
    except OSError as error:
        raise DocumentError(f"Could not open {path}: {error.strerror or error}") from error


class DocumentTabs(QTabWidget):
    """The open documents. `changed(editor)` fires on every text change of any document."""

    changed = Signal(object)
    cursor_moved = Signal(object)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setTabsClosable(True)
        self.setMovable(True)
        self.setDocumentMode(True)
        self.setAccessibleName("Documents")
        self._untitled = 0
        self._editor_font: QFont | None = None  # the writer's text size; every new tab gets it too

    def set_editor_font(self, font: QFont) -> None:
        self._editor_font = QFont(font)
        for editor in self.editors():
            editor.setFont(font)

    def editors(self) -> list[DocumentEditor]:
        return [w for i in range(self.count()) if isinstance(w := self.widget(i), DocumentEditor)]

    def current(self) -> DocumentEditor | None:
        widget = self.currentWidget()
        return widget if isinstance(widget, DocumentEditor) else None

    def new_document(self, text: str = "", path: Path | None = None, encoding: str = UTF8,
                     block_words: list[int] | None = None, built: QTextDocument | None = None) -> DocumentEditor:
        """A new tab showing `text` (`block_words`, `built`: see `DocumentEditor.load_text`)."""
        self._untitled += 1
        editor = DocumentEditor(self._untitled, path)
        if self._editor_font is not None:
            editor.setFont(self._editor_font)
        editor.load_text(text, encoding, block_words, built)
        editor.textChanged.connect(lambda: self._on_changed(editor))
        editor.cursorPositionChanged.connect(lambda: self.cursor_moved.emit(editor))
        editor.document().modificationChanged.connect(lambda _: self.refresh_title(editor))
        self.setCurrentIndex(self.addTab(editor, editor.title))
        return editor

    def open_file(self, path: Path) -> DocumentEditor:
        """Open `path` in a tab (or switch to it when already open), reading it here (see `read_document`)."""
        return self.find_open(path) or self.open_text(path, read_document(path))

    def find_open(self, path: Path) -> DocumentEditor | None:
        """The tab that holds the file `path`, made current; None when it is not open."""
        path = path.resolve()
        for editor in self.editors():
            if editor.path == path:
                self.setCurrentWidget(editor)
                return editor
        return None

    def open_text(self, path: Path, file: TextFile, block_words: list[int] | None = None,
                  built: QTextDocument | None = None) -> DocumentEditor:
        """A new tab for the file `path`, read as `file` (`block_words`, `built`: as `new_document`)."""
        editor = self.new_document(file.text, path.resolve(), file.encoding, block_words, built)
        self.refresh_title(editor)
        return editor

    def save(self, editor: DocumentEditor, path: Path | None = None) -> str:
        """Save to `path` (else the editor's file); return the old encoding when the file became UTF-8."""
        target = path or editor.path
        if target is None:
            raise DocumentError("This document has no file yet; use Save As.")
        if target.suffix.lower() not in FILE_TYPES:
            target = target.with_suffix(".txt")
        if is_read_only(target):
            raise DocumentError(f"{target} is read-only, so it was not replaced; use Save As to save a copy "
                                "elsewhere, or make the file writable and save again.")
        try:
            changed = editor.save_file(target.resolve())
        except OSError as error:
            raise DocumentError(f"Could not save {target}: {error.strerror or error}") from error
        self.refresh_title(editor)
        return changed

    def refresh_title(self, editor: DocumentEditor) -> None:
        index = self.indexOf(editor)
        if index >= 0:
            self.setTabText(index, ("• " if editor.modified else "") + editor.title)
            self.setTabToolTip(index, str(editor.path) if editor.path else "Not saved to a file yet")

    def close_editor(self, editor: DocumentEditor) -> None:
        index = self.indexOf(editor)
        if index >= 0:
            self.removeTab(index)
            editor.deleteLater()

    def _on_changed(self, editor: DocumentEditor) -> None:
        self.changed.emit(editor)
