"""Quitting while variants are being written stops the worker thread and exits cleanly."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from tests.app.conftest import MakeWindow
from tests.app.fakes import SOFTMAX, FakeEngine, FakeModel


def _streaming_window(make_window: MakeWindow, qtbot: QtBot):  # type: ignore[no-untyped-def]
    window = make_window(FakeEngine(FakeModel(SOFTMAX, step_s=0.02, length=10_000)))
    window.controls.decode.set_values({"max_new_tokens": 2000})
    window.generate()
    qtbot.waitUntil(lambda: window._first_token_at is not None, timeout=5000)
    thread = window.generator.worker_thread
    assert thread is not None and thread.is_alive()
    return window, thread


def test_closing_the_window_mid_generation_stops_the_worker(make_window: MakeWindow, qtbot: QtBot) -> None:
    window, thread = _streaming_window(make_window, qtbot)
    window.close()
    assert not thread.is_alive() and not window.generator.running


def test_application_quit_mid_generation_stops_the_worker(make_window: MakeWindow, qtbot: QtBot) -> None:
    window, thread = _streaming_window(make_window, qtbot)
    app = QApplication.instance()
    assert isinstance(app, QApplication)
    app.aboutToQuit.emit()  # what QApplication.quit() sends; it skips the window's closeEvent
    assert not thread.is_alive() and not window.generator.running


@pytest.mark.parametrize("how", ["close", "quit"])
def test_quitting_the_app_mid_generation_exits_zero(tmp_path: Path, tiny_bundle: Path, how: str) -> None:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    result = subprocess.run([sys.executable, "-m", "tests.app.quit_driver", str(tmp_path), str(tiny_bundle), how],
                            capture_output=True, text=True, timeout=120, env=env, check=False)
    assert "QUITTING" in result.stdout, result.stderr
    assert result.returncode == 0, result.stderr
