"""What the measuring tools share: a real main window with a bundle loaded, driven by Qt's event loop."""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QEventLoop, QTimer

from app.paths import AppPaths
from engine.front_door import Engine

if TYPE_CHECKING:
    from app.editor.document import DocumentEditor
    from app.main_window import MainWindow


def wait_until(condition: Callable[[], bool]) -> None:
    """Run the Qt event loop until `condition()` holds. Unlike a processEvents() busy loop, the event
    loop sleeps between events and leaves the GIL to the generation thread, as the real app does."""
    loop = QEventLoop()
    check = QTimer(interval=5)
    check.timeout.connect(lambda: loop.quit() if condition() else None)
    check.start()
    if not condition():
        loop.exec()
    check.stop()


@contextmanager
def loaded_window(bundle: Path, size: tuple[int, int] | None = None) -> Iterator[tuple[MainWindow, DocumentEditor]]:
    """A shown main window (throwaway user dirs) with `bundle` loaded and its first document;
    exits with the window's message if the model cannot load. Closed without saving afterwards."""
    from app.main_window import MainWindow  # needs a QApplication, which the caller creates

    with tempfile.TemporaryDirectory() as home:
        window = MainWindow(AppPaths.default(home), engine=Engine(search_dirs=[bundle.parent]))
        window.settings.last_bundle = str(bundle)
        if size is not None:
            window.resize(*size)
        window.show()
        wait_until(lambda: window.model is not None or "Could not load" in window.messages.label.text())
        if window.model is None:
            sys.exit(window.messages.label.text())
        editor = window.tabs.current()
        if editor is None:  # a new window always opens one document
            sys.exit("the window opened without a document to write in")
        yield window, editor
        window.ask_unsaved = lambda editor: "discard"  # type: ignore[method-assign]
        window.close()
