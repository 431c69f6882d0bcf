"""Main-window behaviour for documents: new/open/save/save-as, recent files, closing, autosave recovery."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QFileDialog, QMessageBox

from app.editor.document import DocumentEditor
from app.editor.tabs import DocumentError
from app.persistence.autosave import discard_orphans, recoverable_documents
from app.window_base import WindowBase

FILE_FILTER = "Text and Markdown (*.txt *.md);;Text (*.txt);;Markdown (*.md)"


class FilesMixin(WindowBase):
    """Part of MainWindow (its base, after FilesMixin/GenerationMixin); `self` is the window."""

    def new_document(self) -> DocumentEditor:
        return self.tabs.new_document()

    def open_path(self, path: Path) -> DocumentEditor | None:
        try:
            editor = self.tabs.open_file(path)
        except DocumentError as error:
            self.show_error(str(error))
            return None
        self.settings.add_recent(str(editor.path))
        self._refresh_recent()
        return editor

    def open_dialog(self) -> None:
        name, _ = QFileDialog.getOpenFileName(self, "Open", "", FILE_FILTER)
        if name:
            self.open_path(Path(name))

    def save_current(self, path: Path | None = None) -> bool:
        editor = self.tabs.current()
        if editor is None:
            return False
        if path is None and editor.path is None:
            return self.save_as_dialog()
        try:
            self.tabs.save(editor, path)
        except DocumentError as error:
            self.show_error(str(error))
            return False
        self.autosaver.forget(editor)
        self.settings.add_recent(str(editor.path))
        self._refresh_recent()
        self.statusBar().showMessage(f"Saved {editor.path}", 4000)
        return True

    def save_as_dialog(self) -> bool:
        editor = self.tabs.current()
        if editor is None:
            return False
        name, _ = QFileDialog.getSaveFileName(self, "Save As", str(editor.path or editor.title + ".txt"), FILE_FILTER)
        return self.save_current(Path(name)) if name else False

    def ask_unsaved(self, editor: DocumentEditor) -> str:
        """'save' / 'discard' / 'cancel' for a modified document being closed (tests replace this)."""
        answer = QMessageBox.question(
            self, "Unsaved changes", f"Save changes to {editor.title}?",
            QMessageBox.StandardButton.Save | QMessageBox.StandardButton.Discard | QMessageBox.StandardButton.Cancel,
        )
        return {QMessageBox.StandardButton.Save: "save", QMessageBox.StandardButton.Discard: "discard"}.get(
            answer, "cancel")

    def close_tab(self, index: int) -> bool:
        editor = self.tabs.widget(index)
        if not isinstance(editor, DocumentEditor):
            return True
        if editor.modified:
            answer = self.ask_unsaved(editor)
            if answer == "cancel":
                return False
            if answer == "save":
                self.tabs.setCurrentWidget(editor)
                if not self.save_current():
                    return False
        self.autosaver.forget(editor)
        self.tabs.close_editor(editor)
        if self.tabs.count() == 0:
            self.new_document()
        return True

    def _refresh_recent(self) -> None:
        self.recent_menu.clear()
        for name in self.settings.recent_files:
            action = self.recent_menu.addAction(name)
            action.triggered.connect(lambda _=False, n=name: self.open_path(Path(n)))
        self.recent_menu.setEnabled(bool(self.settings.recent_files))

    def offer_recovery(self) -> None:
        docs = recoverable_documents(self.paths.autosave_dir, self.autosave_session.directory)
        if not docs:  # crashed sessions with no unsaved text: nothing to offer, tidy them away
            discard_orphans(self.paths.autosave_dir, self.autosave_session.directory)
            return
        names = ", ".join(d.title for d in docs[:5]) + ("…" if len(docs) > 5 else "")
        self.messages.show_message(
            f"Variorum did not close properly last time. Unsaved text of {len(docs)} document(s) can be "
            f"recovered: {names}.", "offer", [("Recover", self.recover_documents), ("Discard", self.discard_recovery)])

    def recover_documents(self) -> list[DocumentEditor]:
        docs = recoverable_documents(self.paths.autosave_dir, self.autosave_session.directory)
        opened = []
        for doc in reversed(docs):
            editor = self.tabs.new_document(doc.text, Path(doc.path) if doc.path else None)
            editor.document().setModified(True)  # recovered text is not on disk yet
            self.tabs.refresh_title(editor)
            self.autosaver.touch(editor)
            opened.append(editor)
        self._drop_blank_first_tab()
        self.autosaver.flush()  # our own session now holds the text before the old files go
        discard_orphans(self.paths.autosave_dir, self.autosave_session.directory)
        self.messages.show_message(f"Recovered {len(opened)} document(s). Save them to keep them.", "info")
        return opened

    def discard_recovery(self) -> None:
        discard_orphans(self.paths.autosave_dir, self.autosave_session.directory)
        self.messages.dismiss()

    def _drop_blank_first_tab(self) -> None:
        first = self.tabs.widget(0)
        if not isinstance(first, DocumentEditor) or self.tabs.count() < 2:
            return
        if not first.modified and not first.toPlainText():  # the untitled tab the window started with
            self.tabs.close_editor(first)
