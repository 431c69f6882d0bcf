"""Run the real app window in a subprocess on a bundle, start a long generation and quit while it streams.

Used by test_quit: the process must exit with the app's own code (0), not abort (134) because the worker
thread was still inside torch at interpreter exit.
Usage: python -m tests.app.quit_driver HOME BUNDLE close|quit
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

from app.main_window import MainWindow
from app.paths import AppPaths
from engine.front_door import Engine


def main() -> int:
    home, bundle, how = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
    app = QApplication([])
    window = MainWindow(AppPaths.default(home), engine=Engine(search_dirs=[bundle.parent]))
    window.ask_unsaved = lambda editor: "discard"  # type: ignore[method-assign]
    window.show()

    def quit_once_streaming() -> None:
        if window.model is not None and not window.generator.running and window._first_token_at is None:
            window.controls.decode.set_values({"n": 5, "max_new_tokens": 2000})
            window.generate()
        elif window._first_token_at is not None:  # tokens are streaming: quit now
            poll.stop()
            print("QUITTING", flush=True)
            (window.close if how == "close" else app.quit)()

    window._first_token_at = None
    poll = QTimer(interval=10)
    poll.timeout.connect(quit_once_streaming)
    poll.start()
    return int(app.exec())


if __name__ == "__main__":
    sys.exit(main())
