"""The main window's shared parts, declared once so its behaviour mixins (window_files, window_generation)
type-check against a real base class instead of a `self: MainWindow` annotation mypy rejects."""

from __future__ import annotations

from PySide6.QtWidgets import QLabel, QListWidget, QMainWindow, QMenu, QProgressBar, QTabWidget

from app.controls.panel import ControlsPanel
from app.editor.document import DocumentEditor
from app.editor.find_bar import FindBar
from app.editor.tabs import DocumentTabs
from app.message_bar import MessageBar
from app.paths import AppPaths
from app.persistence.autosave import AutosaveSession
from app.persistence.autosaver import Autosaver
from app.persistence.history_store import HistoryStore
from app.persistence.presets import PresetStore
from app.persistence.settings import AppSettings
from app.persistence.settings_saver import SettingsSaver
from app.variants.panel import VariantsPanel
from app.worker import GenerationController
from engine.front_door import Engine


class WindowBase(QMainWindow):
    """What MainWindow builds in its __init__ (only declared here) and the error helper all parts use."""

    paths: AppPaths
    engine: Engine
    settings: AppSettings
    settings_saver: SettingsSaver
    history_store: HistoryStore
    presets: PresetStore
    autosave_session: AutosaveSession
    autosaver: Autosaver
    generator: GenerationController
    messages: MessageBar
    side_tabs: QTabWidget  # Variants | History
    tabs: DocumentTabs
    find_bar: FindBar
    variants: VariantsPanel
    history_list: QListWidget
    controls: ControlsPanel
    model_label: QLabel
    activity: QLabel  # the status line's progress: loading, writing (speed, time left), or how the last batch went
    activity_bar: QProgressBar
    recent_menu: QMenu

    def show_error(self, text: str, details: str = "") -> None:
        self.messages.show_message(text, "error", details=details)

    def show_activity(self, text: str, busy: bool = False, share: float | None = None) -> None:
        """Say on the status line what the window is doing or last did; a bar shows while `busy`, filling up
        with `share` (0–1) when the share done is known, moving to and fro when it is not. The text stays
        until the next activity replaces it."""
        self.activity.setText(text)
        self.activity_bar.setVisible(busy)
        if busy and share is None:
            self.activity_bar.setRange(0, 0)
        elif busy and share is not None:
            self.activity_bar.setRange(0, 100)
            self.activity_bar.setValue(round(100 * share))

    def add_notice(self, text: str, details: str = "") -> None:
        """Show a notice without hiding an open offer (e.g. recovery): it is added to the offer's text."""
        if self.messages.kind == "offer":
            self.messages.label.setText(f"{self.messages.label.text()} {text}")
        else:
            self.show_error(text, details)

    def refresh_history(self) -> None:
        """Show the current document's batches (GenerationMixin implements it)."""
        raise NotImplementedError

    def settings_changed(self) -> None:
        """Every change of `settings` (or the controls) ends here: saved soon, so a crash keeps it."""
        self.settings_saver.schedule()

    def keep_history(self, editor: DocumentEditor) -> None:
        """Store a saved document's generation history with its file (an unsaved one's rides in its autosave)."""
        if editor.path is None:
            self.autosaver.touch(editor)
            return
        try:
            self.history_store.save(editor.path, editor.history)
        except OSError as error:
            self.show_error(f"The generation history of {editor.title} could not be saved "
                            f"({error.strerror or error}).")
