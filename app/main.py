"""Start the app: `python -m app [--home DIR] [files…]` (or the `variorum-app` command).

A window shows at once: the engine (torch and the model code) takes seconds to import, half a minute on a
busy computer, so a small "Starting Variorum" window with a moving progress bar stands in meanwhile, the
import running beside it. The main window then opens, and the model loads behind it with its progress on
the status line, so the writer can start typing before the model is ready.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import threading
from pathlib import Path

from PySide6.QtCore import QEventLoop, Qt, QTimer
from PySide6.QtWidgets import QApplication, QLabel, QProgressBar, QVBoxLayout, QWidget

from app.paths import AppPaths
from app.qt_platform import platform_problem

ENGINE_MODULE = "engine.front_door"  # the slow import: torch and every model family
POLL_S = 0.03  # how often the starting window repaints while the engine imports


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="variorum-app", description="Variorum: draft many versions of a text.")
    parser.add_argument("files", nargs="*", type=Path, help="text or Markdown files to open")
    parser.add_argument("--home", type=Path, default=None,
                        help="keep settings and autosaves under this folder instead of the user dirs")
    parser.add_argument("--no-model", action="store_true", help="start without loading a model")
    parser.add_argument("--smoke-test", action="store_true",
                        help="open the window on the bundled model, write a few tokens and exit (0 = works)")
    return parser.parse_args(argv)


class StartingWindow(QWidget):
    """What the writer sees while the engine imports: the app's name, what it is doing, a moving bar."""

    def __init__(self) -> None:
        super().__init__()
        self.setWindowTitle("Variorum")
        self.label = QLabel("Starting Variorum: getting the writing engine ready…", wordWrap=True)
        self.label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        bar = QProgressBar(textVisible=False)
        bar.setRange(0, 0)  # how long an import takes cannot be told
        layout = QVBoxLayout(self)
        layout.addWidget(self.label)
        layout.addWidget(bar)
        self.resize(420, 110)


def import_beside(app: QApplication, module: str = ENGINE_MODULE) -> None:
    """Import `module` in a thread while the UI thread keeps painting; its error, if any, is raised here. Only
    modules without Qt objects may be imported so: a Qt object made in that thread would belong to it."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            importlib.import_module(module)
        except BaseException as error:  # re-raised on the UI thread, where the start-up can report it
            errors.append(error)

    thread = threading.Thread(target=run, name="variorum-import", daemon=True)
    thread.start()
    while thread.is_alive():
        app.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 50)
        thread.join(POLL_S)
    if errors:
        raise errors[0]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.smoke_test:
        return _smoke_test()
    problem = None if QApplication.instance() else platform_problem()
    if problem:
        print(f"variorum-app: {problem}", file=sys.stderr)
        return 1
    app = QApplication.instance() or QApplication(sys.argv[:1])
    assert isinstance(app, QApplication)  # made just above when there was none
    app.setApplicationName("Variorum")
    starting = StartingWindow()
    starting.show()
    import_beside(app)
    from app.main_window import MainWindow  # after QApplication (widgets need it) and the engine's import

    window = MainWindow(AppPaths.default(args.home), load_model=False)
    for path in args.files:
        window.open_path(path)
    window.show()
    starting.close()
    app.processEvents()  # paint the window before the model load competes for the processor
    if not args.no_model:
        QTimer.singleShot(0, window.refresh_bundles)
    return int(app.exec())


def _smoke_test() -> int:
    """The packaged build's self-check (see app/tools/smoke.py)."""
    from app.tools.smoke import run_smoke_test

    return run_smoke_test()
