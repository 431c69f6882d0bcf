"""The main window: editor tabs | variants and history | controls, with menus, shortcuts and status bar."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QPoint, Qt, QTimer
from PySide6.QtGui import QAction, QCloseEvent, QFont, QGuiApplication, QKeySequence
from PySide6.QtWidgets import (
    QApplication,
    QLabel,
    QListWidget,
    QProgressBar,
    QPushButton,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from app.about import AboutDialog
from app.controls.panel import ControlsPanel
from app.editor.document import DocumentEditor
from app.editor.find_bar import FindBar
from app.editor.tabs import DocumentTabs
from app.message_bar import MessageBar
from app.paths import AppPaths
from app.persistence.autosave import AutosaveSession
from app.persistence.autosaver import DEBOUNCE_MS, Autosaver
from app.persistence.history_store import HistoryStore
from app.persistence.presets import PresetStore
from app.persistence.settings import AppSettings, load_settings
from app.persistence.settings_saver import SettingsSaver
from app.theme import apply_theme
from app.ui_thread_gc import UiThreadCollector
from app.variants.labels import LabelSource
from app.variants.panel import VariantsPanel
from app.variants.preview import InlinePreview, text_before_selection
from app.window_files import FilesMixin
from app.window_models import ModelsMixin
from app.worker import BackgroundCall, GenerationController
from engine.front_door import Engine, LoadedModel
from engine.prompt_join import fit_after

DEFAULT_SIZE = (1280, 800)  # fits a 1280×800 screen; every control is reachable at this size
SPLITTER_SIZES = (420, 520, 340)  # editor | variants | controls, at the default width


class MainWindow(FilesMixin, ModelsMixin):
    """Everything a writer sees. `engine` is injectable so UI tests can use a fake one."""

    def __init__(self, paths: AppPaths, engine: Engine | None = None, load_model: bool = True,
                 autosave_ms: int = DEBOUNCE_MS) -> None:
        super().__init__()
        self.paths = paths
        self.engine = engine or Engine()
        self.model: LoadedModel | None = None
        self.model_name = ""
        self.labels: LabelSource | None = None
        self._loader: BackgroundCall | None = None
        self._preparer: BackgroundCall | None = None
        self._importer: BackgroundCall | None = None
        self._checkpoint_scan: BackgroundCall | None = None
        self._batch_editor: DocumentEditor | None = None
        self._tagger_call: BackgroundCall | None = None
        self.settings, settings_notice = load_settings(paths.settings_file)
        self.settings_saver = SettingsSaver(paths.settings_file, self._current_settings, self.add_notice, self)
        self.presets = PresetStore(paths.presets_file)
        self.history_store = HistoryStore(paths.data_dir / "history")
        self.autosave_session = AutosaveSession(paths.autosave_dir)
        self.autosaver = Autosaver(self.autosave_session, self.add_notice, self, autosave_ms)
        self.generator = GenerationController(self)
        app = QApplication.instance()
        if app is not None:
            app.aboutToQuit.connect(self.shutdown_workers)  # QApplication.quit() skips closeEvent
            UiThreadCollector.install(app)  # the window's worker threads must never destroy a widget
        self.setWindowTitle("Variorum")
        self.resize(*DEFAULT_SIZE)
        self._build()
        self._restore_geometry()
        self._build_menus()
        self._connect()
        self.new_document()
        self.controls.decode.set_values(self.settings.controls)
        self.controls.model.set_device(self.settings.device)
        self.controls.model.set_runtime(self.settings.runtime)
        self.apply_look()
        self.controls.decode.changed.connect(self.settings_changed)
        self.offer_recovery([settings_notice, self.presets.notice, self.autosave_session.notice])
        if load_model:
            self.refresh_bundles()

    # --- layout ------------------------------------------------------------------------------------
    def _build(self) -> None:
        central = QWidget()
        self.messages = MessageBar()  # under the document: it covers no tab and moves no control
        self.tabs = DocumentTabs()
        self.find_bar = FindBar(self.tabs.current)
        editor_side = QWidget()
        editor_layout = QVBoxLayout(editor_side)
        editor_layout.setContentsMargins(0, 0, 0, 0)
        editor_layout.addWidget(self.tabs, 1)
        editor_layout.addWidget(self.find_bar)
        editor_layout.addWidget(self.messages)
        self.variants = VariantsPanel()
        self.preview = InlinePreview(self.variants.texts, self)
        self.preview.message.connect(lambda text: self.statusBar().showMessage(text, 8000))
        self.history_list = QListWidget()
        self.history_list.setAccessibleName("Generation history")
        self.history_list.setToolTip("Every batch generated for this document. Double-click to show it again.")
        restore = QPushButton("Restore selected batch")
        restore.setToolTip("Show the batch's variants again; your controls stay as they are.")
        restore.clicked.connect(lambda: self.restore_batch(self.history_list.currentRow()))
        use_settings = QPushButton("Use its settings")
        use_settings.setToolTip("Set the controls to the settings the selected batch was written with.")
        use_settings.clicked.connect(lambda: self.use_batch_settings(self.history_list.currentRow()))
        history = QWidget()
        history_layout = QVBoxLayout(history)
        history_layout.addWidget(self.history_list, 1)
        history_layout.addWidget(restore)
        history_layout.addWidget(use_settings)
        self.side_tabs = QTabWidget()
        self.side_tabs.addTab(self.variants, "Variants")
        self.side_tabs.addTab(history, "History")
        self.controls = ControlsPanel(self.presets)
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        for widget, stretch in ((editor_side, 4), (self.side_tabs, 5), (self.controls, 2)):
            self.splitter.addWidget(widget)
            self.splitter.setStretchFactor(self.splitter.count() - 1, stretch)
        self.splitter.setSizes(list(SPLITTER_SIZES))
        layout = QVBoxLayout(central)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.splitter, 1)
        self.setCentralWidget(central)
        self._build_status_bar()
        self._word_timer = QTimer(self, singleShot=True, interval=250)
        self._word_timer.timeout.connect(self._update_words)

    def _build_status_bar(self) -> None:
        """Messages on the left; the progress of loading or writing, the word count and the model on the right."""
        self.words_label = QLabel()
        self.model_label = QLabel("No model loaded")
        self.activity = QLabel()
        self.activity.setAccessibleName("Progress")
        self.activity_bar = QProgressBar(textVisible=False)
        self.activity_bar.setMaximumWidth(120)
        self.activity_bar.hide()
        self.statusBar().addPermanentWidget(self.activity_bar)
        self.statusBar().addPermanentWidget(self.activity)
        self.statusBar().addPermanentWidget(self.words_label)
        self.statusBar().addPermanentWidget(self.model_label)

    def _action(self, menu_name: str, text: str, slot: object,
                shortcut: str | QKeySequence | QKeySequence.StandardKey = "") -> QAction:
        action = QAction(text, self)
        if shortcut:
            action.setShortcut(QKeySequence(shortcut))
        action.triggered.connect(slot)
        self.menus[menu_name].addAction(action)
        self.addAction(action)
        return action

    def _build_menus(self) -> None:
        bar = self.menuBar()
        self.menus = {name: bar.addMenu(name) for name in ("&File", "&Edit", "&Generate", "&View", "&Help")}
        self._action("&File", "New", self.new_document, QKeySequence.StandardKey.New)
        self._action("&File", "Open…", self.open_dialog, QKeySequence.StandardKey.Open)
        self.recent_menu = self.menus["&File"].addMenu("Open Recent")
        self._action("&File", "Add Model from Folder…", self.add_model_folder_dialog)
        self._action("&File", "Save", self.save, QKeySequence.StandardKey.Save)
        self._action("&File", "Save As…", self.save_as_dialog, "Ctrl+Shift+S")
        self._action("&File", "Close Tab", lambda: self.close_tab(self.tabs.currentIndex()), "Ctrl+W")
        self._action("&File", "Quit", self.close, QKeySequence.StandardKey.Quit)
        self._action("&Edit", "Undo", lambda: self._on_editor("undo"), QKeySequence.StandardKey.Undo)
        self._action("&Edit", "Redo", lambda: self._on_editor("redo"), QKeySequence.StandardKey.Redo)
        self._action("&Edit", "Find…", self.find_bar.open, QKeySequence.StandardKey.Find)
        self._action("&Generate", "Generate", self.generate, "Ctrl+Return")
        self.addAction(self._shortcut("Ctrl+Enter", self.generate))
        self._action("&Generate", "Stop", self.stop, "Esc")
        for n in range(1, 9):
            self._action("&Generate", f"Insert variant {n}", lambda _=False, k=n: self.insert_variant(k), f"Ctrl+{n}")
        self._action("&Generate", "Preview next variant in place", lambda: self.preview_variant(1), "Alt+]")
        self._action("&Generate", "Preview previous variant in place", lambda: self.preview_variant(-1), "Alt+[")
        self.dark_action = self._action("&View", "Dark theme", self._toggle_theme)
        self.dark_action.setCheckable(True)
        self._action("&View", "Larger text", lambda: self.set_font_size(self.settings.font_size + 1), "Ctrl+=")
        self._action("&View", "Smaller text", lambda: self.set_font_size(self.settings.font_size - 1), "Ctrl+-")
        self._action("&Help", "About Variorum", self.show_about)
        self._refresh_recent()

    def show_about(self) -> None:
        """Help → About: what Variorum runs on, the pretrained base included when it is installed."""
        self.about = AboutDialog(self.engine.models_dir, self)
        self.about.open()

    def _shortcut(self, keys: str, slot: object) -> QAction:
        action = QAction(self)
        action.setShortcut(QKeySequence(keys))
        action.triggered.connect(slot)
        return action

    def _connect(self) -> None:
        self.tabs.tabCloseRequested.connect(self.close_tab)
        self.tabs.changed.connect(self._on_text_changed)
        self.tabs.currentChanged.connect(self._on_tab_changed)
        self.controls.generate_clicked.connect(self.generate)
        self.controls.stop_clicked.connect(self.stop)
        self.controls.preset_message.connect(lambda m: self.statusBar().showMessage(m, 5000))
        self.controls.model.bundle_chosen.connect(self.load_bundle)
        self.controls.model.checkpoint_chosen.connect(self.import_checkpoint)
        self.controls.model.add_folder_clicked.connect(self.add_model_folder_dialog)
        self.controls.mode.mode_picked.connect(self.load_model_for_mode)
        self.controls.model.device_chosen.connect(self._on_device)
        self.controls.model.runtime_chosen.connect(self._on_runtime)
        self.generator.tokens.connect(self._on_tokens)
        self.generator.finished.connect(self._on_finished)
        self.variants.insert_requested.connect(self.insert_text)
        self.variants.replace_requested.connect(self.replace_text)
        self.variants.regenerate_requested.connect(self.regenerate)
        self.variants.colour_mode_changed.connect(lambda _: self.recolour())
        self.history_list.itemDoubleClicked.connect(lambda _: self.restore_batch(self.history_list.currentRow()))

    # --- behaviour ---------------------------------------------------------------------------------
    def _on_device(self, name: str) -> None:
        self.settings.device = name
        self._reload_current()

    def _on_runtime(self, name: str) -> None:
        self.settings.runtime = name
        self._reload_current()

    def _reload_current(self) -> None:
        """Save the changed device / runtime setting and reload the picked model with it."""
        self.settings_changed()
        index = self.controls.model.picker.currentIndex()
        bundles = self.controls.model.bundles
        if 0 <= index < len(bundles) and not bundles[index].error:
            self.load_bundle(Path(bundles[index].path))

    def _on_text_changed(self, editor: DocumentEditor) -> None:
        self.autosaver.touch(editor)
        self._word_timer.start()

    def _on_tab_changed(self, _index: int) -> None:
        self._update_words()
        self.refresh_history()

    def _update_words(self) -> None:
        editor = self.tabs.current()
        self.words_label.setText(f"{editor.word_count()} words" if editor else "")

    def _on_editor(self, action: str) -> None:
        editor = self.tabs.current()
        if editor is not None:
            getattr(editor, action)()

    def insert_text(self, text: str) -> None:
        editor = self.tabs.current()
        if editor is not None and text:
            editor.insert_variant(fit_after(text_before_selection(editor), text))  # one separator, never two
            editor.setFocus()

    def replace_text(self, text: str) -> None:
        editor = self.tabs.current()
        if editor is not None and not editor.replace_selection(fit_after(text_before_selection(editor), text)):
            self.show_error("Select the text to replace in the document first.")

    def preview_variant(self, step: int) -> None:
        """Alt+] / Alt+[: show the next / previous variant in place at the cursor (app/variants/preview.py)."""
        editor = self.tabs.current()
        if editor is not None and not self.preview.cycle(editor, step):
            self.statusBar().showMessage("No variants to preview yet: press Ctrl+Enter to write some.", 5000)

    def insert_variant(self, number: int) -> None:
        if 1 <= number <= len(self.variants.panes):
            self.insert_text(self.variants.panes[number - 1].state.text)

    def _toggle_theme(self) -> None:
        self.settings.theme = "dark" if self.dark_action.isChecked() else "light"
        self.apply_look()
        self.settings_changed()

    def set_font_size(self, size: int) -> None:
        self.settings.font_size = min(max(size, 8), 32)
        self.apply_look()
        self.settings_changed()

    def apply_look(self) -> None:
        app = QApplication.instance()
        if isinstance(app, QApplication):
            apply_theme(app, self.settings.theme)
        self.dark_action.setChecked(self.settings.theme == "dark")
        font = QFont(self.font())
        font.setPointSize(self.settings.font_size)
        self.tabs.set_editor_font(font)
        self.variants.setFont(font)

    def _restore_geometry(self) -> None:
        """The window's size and place and the columns' widths as the writer left them."""
        if len(self.settings.window_size) == 2:
            self.resize(*self.settings.window_size)
        place = self.settings.window_position
        if len(place) == 2 and QGuiApplication.screenAt(QPoint(*place)) is not None:  # a screen still shows it
            self.move(*place)
        if self.settings.maximized:
            self.setWindowState(Qt.WindowState.WindowMaximized)
        if len(self.settings.splitter_sizes) == self.splitter.count():
            self.splitter.setSizes(self.settings.splitter_sizes)

    def _current_settings(self) -> AppSettings:
        self.settings.controls = self.controls.decode.values()
        self.settings.maximized = self.isMaximized()
        if not self.isMaximized():  # a maximized window's size is the screen's, not the writer's choice
            self.settings.window_size = [self.width(), self.height()]
            self.settings.window_position = [self.x(), self.y()]
        self.settings.splitter_sizes = self.splitter.sizes()
        return self.settings

    def closeEvent(self, event: QCloseEvent) -> None:
        if not self.close_all_documents():
            event.ignore()
            return
        self.shutdown_workers()
        if not self.settings_saver.flush():
            print(f"variorum: could not save settings to {self.paths.settings_file}")
        self.autosave_session.close()
        event.accept()
