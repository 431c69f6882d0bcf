"""Main-window behaviour for documents: new/open/save/save-as, recent files, closing, autosave recovery.

Recovery deletes an old autosave only after its text is written into this session's autosave, or
when the writer presses Discard; unreadable autosaves are named and left alone.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QTextDocument
from PySide6.QtWidgets import QFileDialog, QMessageBox

from app.editor.building import DocumentBuilder
from app.editor.document import DocumentEditor, paragraph_words
from app.editor.history import History
from app.editor.tabs import DocumentError, check_file_type, read_document
from app.editor.text_file import UTF8, TextFile, describe
from app.paths import dialog_folder
from app.persistence.autosave import FoundDocument, find_recoverable, forget_files, kept_notice, remove_empty_orphans
from app.persistence.autosaver import saved_document
from app.window_base import WindowBase
from app.worker import BackgroundCall

FILE_FILTER = "Text and Markdown (*.txt *.md);;Text (*.txt);;Markdown (*.md)"
READ_AT_ONCE = 2 * 2**20  # bytes: a larger file is read off the UI thread (an 80 MB one takes seconds)
LISTED_UNSAVED = 15  # titles the quit dialog names before "and N more"


def unsaved_list(titles: list[str]) -> str:
    """The quit dialog's list of unsaved documents, one per line."""
    shown = "\n".join(f"• {title}" for title in titles[:LISTED_UNSAVED])
    more = len(titles) - LISTED_UNSAVED
    return shown + (f"\n…and {more} more" if more > 0 else "")


def _read_and_count(path: Path) -> tuple[TextFile, list[int]]:
    """A large file's text and its paragraphs' word counts, both worked out off the UI thread."""
    file = read_document(path)
    return file, paragraph_words(file.text)


class FilesMixin(WindowBase):
    """Part of MainWindow (its bases: FilesMixin, ModelsMixin, GenerationMixin); `self` is the window."""

    _offered: list[FoundDocument]  # the crashed sessions' documents the recovery offer names

    def new_document(self) -> DocumentEditor:
        return self.tabs.new_document()

    def open_path(self, path: Path) -> DocumentEditor | None:
        """Open `path` in a tab and return it. A file larger than `READ_AT_ONCE` is read off the UI thread and
        opens once read (None now; the message bar says it is opening). Why a file cannot be opened (not a
        regular file, such as a FIFO, which would wait for a writer forever) is one line in the message bar."""
        if (editor := self.tabs.find_open(path)) is not None:
            return editor
        try:
            check_file_type(path)
            size = path.stat().st_size
        except DocumentError as error:
            self.show_error(str(error))
            return None
        except OSError:
            size = 0  # read_document names the problem
        if size > READ_AT_ONCE:
            self._read_in_background(path, size)
            return None
        try:
            return self._show_opened(path, read_document(path))
        except DocumentError as error:
            self.show_error(str(error))
            return None

    def _read_in_background(self, path: Path, size: int) -> None:
        opening = f"Opening {path.name} ({size / 2**20:.0f} MB)… You can keep writing meanwhile."
        reader = BackgroundCall(lambda: _read_and_count(path), self)
        reader.done.connect(lambda read: self._on_read(reader, opening, path, read))
        reader.failed.connect(lambda message: self._on_read(reader, opening, path, None, message))
        self.messages.show_message(opening, "info")
        reader.start()

    def _on_read(self, reader: BackgroundCall, opening: str, path: Path, read: tuple[TextFile, list[int]] | None,
                 error: str = "") -> None:
        """The file is read: build its document a piece at a time (app/editor/building.py), then show it."""
        reader.deleteLater()  # it holds the file's text
        if read is None:
            self._done_opening(opening)
            self.show_error(error)
            return
        file, block_words = read
        builder = DocumentBuilder(file.text, self)
        builder.built.connect(lambda document: self._on_built(builder, opening, path, file, block_words, document))
        builder.start()

    def _on_built(self, builder: DocumentBuilder, opening: str, path: Path, file: TextFile, block_words: list[int],
                  document: QTextDocument) -> None:
        self._done_opening(opening)
        self._show_opened(path, file, block_words, document)
        builder.deleteLater()  # with the document, unless an editor took it

    def _done_opening(self, opening: str) -> None:
        if self.messages.label.text() == opening:
            self.messages.dismiss()

    def _show_opened(self, path: Path, file: TextFile, block_words: list[int] | None = None,
                     built: QTextDocument | None = None) -> DocumentEditor:
        """The tab for `path` (a new one showing `file`, unless it was opened meanwhile), with its history."""
        editor = self.tabs.find_open(path) or self.tabs.open_text(path, file, block_words, built)
        if editor.path is not None and not editor.history.batches:
            editor.history, notice = self.history_store.load(editor.path)
            self.refresh_history()
            if notice:
                self.show_error(notice)
        if editor.encoding != UTF8:
            self.messages.show_message(f"{editor.title} is not UTF-8; it was read as {describe(editor.encoding)} "
                                       "and will be saved the same way.", "info")
        self._remember_recent(editor)
        return editor

    def _remember_recent(self, editor: DocumentEditor) -> None:
        self.settings.add_recent(str(editor.path))
        self._refresh_recent()
        self.settings_changed()

    def open_dialog(self) -> None:
        name, _ = QFileDialog.getOpenFileName(self, "Open", str(self._last_folder()), FILE_FILTER)
        if name:
            self.open_path(Path(name))

    def save(self) -> bool:
        """File → Save (Ctrl+S): to the document's file, or through the Save As dialog when it has none.

        A slot of its own: a menu action passes `checked` (False), which must never reach `path`."""
        return self.save_current()

    def save_current(self, path: Path | None = None) -> bool:
        editor = self.tabs.current()
        if editor is None:
            return False
        if path is None and editor.path is None:
            return self.save_as_dialog()
        try:
            old_encoding = self.tabs.save(editor, path)
        except DocumentError as error:
            self.show_error(str(error))
            return False
        self.autosaver.forget(editor)
        self.keep_history(editor)
        self._remember_recent(editor)
        self.statusBar().showMessage(f"Saved {editor.path}", 4000)
        if old_encoding:
            self.messages.show_message(f"{editor.title} now holds characters {old_encoding} cannot store, so it "
                                       "was saved as UTF-8.", "info")
        return True

    def save_as_dialog(self) -> bool:
        editor = self.tabs.current()
        if editor is None:
            return False
        start = editor.path or self._last_folder() / f"{editor.title}.txt"
        name, _ = QFileDialog.getSaveFileName(self, "Save As", str(start), FILE_FILTER)
        return self.save_current(Path(name)) if name else False

    def _last_folder(self) -> Path:
        """Where Open and Save As start: the folder of the file last opened or saved (the recent files are
        kept in the settings, so this holds across runs), else the writer's documents folder."""
        return dialog_folder(Path(name).parent for name in self.settings.recent_files)

    def ask_unsaved(self, editors: list[DocumentEditor], /) -> str:
        """'save' / 'discard' / 'cancel' for modified documents being closed, asked once for all of them: one
        document gets Save / Discard / Cancel, several get one list with Save All / Discard All / Cancel
        (tests replace this)."""
        buttons = QMessageBox.StandardButton
        if len(editors) == 1:
            box = QMessageBox(QMessageBox.Icon.Question, "Unsaved changes", f"Save changes to {editors[0].title}?",
                              buttons.Save | buttons.Discard | buttons.Cancel, self)
        else:
            box = QMessageBox(QMessageBox.Icon.Question, "Unsaved changes",
                              f"{len(editors)} documents have unsaved changes. Save them before closing?",
                              buttons.SaveAll | buttons.Discard | buttons.Cancel, self)
            box.setInformativeText(unsaved_list([editor.title for editor in editors]))
            box.button(buttons.Discard).setText("Discard All")
        box.setDefaultButton(buttons.Cancel)
        box.setTextFormat(Qt.TextFormat.PlainText)  # titles are file names, shown as typed
        box.exec()
        clicked = box.clickedButton()
        answer = box.standardButton(clicked) if clicked is not None else buttons.Cancel
        box.deleteLater()
        return {buttons.Save: "save", buttons.SaveAll: "save", buttons.Discard: "discard"}.get(answer, "cancel")

    def close_tab(self, index: int) -> bool:
        editor = self.tabs.widget(index)
        if not isinstance(editor, DocumentEditor):
            return True
        if editor.modified:
            answer = self.ask_unsaved([editor])
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

    def close_all_documents(self) -> bool:
        """Quitting: ask once about every document with unsaved changes, then save them all or drop their
        autosaves; False (nothing is closed) when the writer cancels or a save fails or is cancelled."""
        unsaved = [editor for editor in self.tabs.editors() if editor.modified]
        if not unsaved:
            return True
        answer = self.ask_unsaved(unsaved)
        if answer == "cancel":
            return False
        for editor in unsaved:
            if answer == "save":
                self.tabs.setCurrentWidget(editor)  # a document without a file gets its own Save As dialog
                if not self.save_current():
                    return False
            self.autosaver.forget(editor)
        return True

    def _refresh_recent(self) -> None:
        self.recent_menu.clear()
        for name in self.settings.recent_files:
            action = self.recent_menu.addAction(name)
            action.triggered.connect(lambda _=False, n=name: self.open_path(Path(n)))
        self.recent_menu.setEnabled(bool(self.settings.recent_files))

    def offer_recovery(self, notices: list[str]) -> None:
        """Offer crashed sessions' documents; show the start-up `notices` with the offer (or alone)."""
        recovery = find_recoverable(self.paths.autosave_dir, self.autosave_session.directory)
        remove_empty_orphans(self.paths.autosave_dir, self.autosave_session.directory)
        self._offered = recovery.documents
        notes = " ".join(n for n in (*notices, recovery.damaged_notice()) if n)
        if not self._offered:
            if notes:
                self.show_error(notes)
            return
        docs = [found.document for found in self._offered]
        names = ", ".join(d.title for d in docs[:5]) + ("…" if len(docs) > 5 else "")
        self.messages.show_message(
            f"Variorum did not close properly last time. Unsaved text of {len(docs)} document(s) can be "
            f"recovered: {names}. {notes}".strip(), "offer",
            [("Recover", self.recover_documents), ("Discard", self.discard_recovery)])

    def recover_documents(self) -> list[DocumentEditor]:
        opened, safe, failures = [], [], []
        for found in reversed(self._offered):
            editor = self._open_recovered(found)
            opened.append(editor)
            try:
                self.autosave_session.write(saved_document(editor))
                safe.append(found.file)
            except OSError as error:
                failures.append(f"{editor.title} ({error.strerror or error}; still in {found.file})")
                self.autosaver.adopt(editor, found.file)  # deleted once this session holds the text
        self._offered = []
        self._drop_blank_first_tab()
        kept = kept_notice(forget_files(safe, self.paths.autosave_dir, self.autosave_session.directory))
        text = f"Recovered {len(opened)} document(s). Save them to keep them."
        if failures:
            text += f" Could not autosave {len(failures)} of them again, so their old autosave is kept: " + \
                "; ".join(failures) + "."
        self.messages.show_message(f"{text} {kept}".strip(), "error" if failures or kept else "info")
        return opened

    def _open_recovered(self, found: FoundDocument) -> DocumentEditor:
        doc = found.document
        editor = self.tabs.new_document(doc.text, Path(doc.path) if doc.path else None, doc.encoding)
        editor.history = History.from_json(doc.history)[0]
        if editor.path is not None:  # a file's history is in the history store
            editor.history = self.history_store.load(editor.path)[0]
        editor.document().setModified(True)  # recovered text is not on disk yet
        self.tabs.refresh_title(editor)
        return editor

    def discard_recovery(self) -> None:
        kept = forget_files([found.file for found in self._offered], self.paths.autosave_dir,
                            self.autosave_session.directory)
        self._offered = []
        if kept:
            self.show_error(kept_notice(kept))
        else:
            self.messages.dismiss()

    def _drop_blank_first_tab(self) -> None:
        first = self.tabs.widget(0)
        if not isinstance(first, DocumentEditor) or self.tabs.count() < 2:
            return
        if not first.modified and not first.toPlainText():  # the untitled tab the window started with
            self.tabs.close_editor(first)
