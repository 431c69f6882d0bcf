"""App test setup: Qt offscreen, a window on a temporary home with a fake (or real tiny) engine."""

from __future__ import annotations

import json
import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from app.main_window import MainWindow
from app.paths import AppPaths
from app.persistence.autosave import LOCK_FILE, SESSION_FILE
from app.ui_thread_gc import UiThreadCollector
from tests.app.fakes import FakeEngine

MakeWindow = Callable[..., MainWindow]
DEAD_PID = 2**22 + 12345  # no such process


def leave_as_crashed(session: Path) -> None:
    """Make a live window's autosave folder look like one a crashed app left: no lock, a dead pid."""
    (session / LOCK_FILE).unlink()
    (session / SESSION_FILE).write_text(json.dumps({"pid": DEAD_PID}))


@pytest.fixture(scope="package", autouse=True)
def python_collects_garbage_after_the_app_tests() -> Iterator[None]:
    """Windows move garbage collection onto the UI thread's timer; the engine tests after these run no event
    loop, so collection goes back to Python when the app tests end."""
    yield
    app = QApplication.instance()
    if app is not None:
        UiThreadCollector.uninstall(app)


@pytest.fixture
def home(tmp_path: Path) -> AppPaths:
    return AppPaths(tmp_path / "data", tmp_path / "config")


@pytest.fixture
def make_window(qtbot: QtBot, home: AppPaths) -> Iterator[MakeWindow]:
    """Build a window (fake engine by default) and wait for its model to load."""
    windows: list[MainWindow] = []

    def make(engine: object | None = None, wait_model: bool = True, **kwargs: object) -> MainWindow:
        window = MainWindow(home, engine=engine or FakeEngine(), **kwargs)  # type: ignore[arg-type]
        window.ask_unsaved = lambda editor: "discard"  # type: ignore[method-assign]
        qtbot.addWidget(window)
        window.show()
        windows.append(window)
        if wait_model:
            qtbot.waitUntil(lambda: window.model is not None, timeout=10_000)
        return window

    yield make
    for window in windows:
        if window.generator.running:
            window.generator.stop()
            qtbot.waitUntil(lambda w=window: not w.generator.running, timeout=5_000)
        window.close()
