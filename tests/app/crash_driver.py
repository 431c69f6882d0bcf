"""Run the real app window in a subprocess, type into it, wait for the autosave, print READY, keep running.

Used by test_persistence: the test SIGKILLs this process and checks the next start offers recovery.
Usage: python -m tests.app.crash_driver HOME TEXT
"""

from __future__ import annotations

import os
import sys
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from app.main_window import MainWindow
from app.paths import AppPaths


def main() -> None:
    home, text = sys.argv[1], sys.argv[2]
    app = QApplication([])
    window = MainWindow(AppPaths.default(home), load_model=False, autosave_ms=100)
    window.show()
    QTest.keyClicks(window.tabs.current(), text)
    session = window.autosave_session.directory
    deadline = time.monotonic() + 10
    while not any(p.name != "session.json" for p in session.glob("*.json")) and time.monotonic() < deadline:
        app.processEvents()
        time.sleep(0.01)
    print("READY", flush=True)
    app.exec()


if __name__ == "__main__":
    main()
