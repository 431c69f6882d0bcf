"""The main window's shared parts, declared once so its behaviour mixins (window_files, window_generation)
type-check against a real base class instead of a `self: MainWindow` annotation mypy rejects."""

from __future__ import annotations

from PySide6.QtWidgets import QLabel, QListWidget, QMainWindow, QMenu

from app.controls.panel import ControlsPanel
from app.editor.find_bar import FindBar
from app.editor.tabs import DocumentTabs
from app.message_bar import MessageBar
from app.paths import AppPaths
from app.persistence.autosave import AutosaveSession
from app.persistence.autosaver import Autosaver
from app.persistence.presets import PresetStore
from app.persistence.settings import AppSettings
from app.variants.panel import VariantsPanel
from app.worker import GenerationController
from engine.api import Engine


class WindowBase(QMainWindow):
    """What MainWindow builds in its __init__ (only declared here) and the error helper all parts use."""

    paths: AppPaths
    engine: Engine
    settings: AppSettings
    presets: PresetStore
    autosave_session: AutosaveSession
    autosaver: Autosaver
    generator: GenerationController
    messages: MessageBar
    tabs: DocumentTabs
    find_bar: FindBar
    variants: VariantsPanel
    history_list: QListWidget
    controls: ControlsPanel
    model_label: QLabel
    recent_menu: QMenu

    def show_error(self, text: str) -> None:
        self.messages.show_message(text, "error")
