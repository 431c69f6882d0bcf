"""The writer always sees what the window is doing: the start shows a window at once, a model loads behind a
progress line, writing shows its speed and time left, the "Done" line stays until the next action, and a
notice never covers the document tabs or the Variants / History tabs."""

from __future__ import annotations

import time
import types

import pytest
from PySide6.QtCore import QPoint, QRect, QTimer
from PySide6.QtWidgets import QApplication, QWidget
from pytestqt.qtbot import QtBot

from app import main as app_main
from app.variants.progress import done_words, share_written, writing_words
from app.variants.state import VariantState
from engine.front_door import DecodeConfig, GenerationRequest
from tests.app.conftest import MakeWindow
from tests.app.fakes import FakeEngine, FakeModel, writes


def _rect_in(widget: QWidget, window: QWidget) -> QRect:
    return QRect(widget.mapTo(window, QPoint(0, 0)), widget.size())


def test_writing_shows_speed_and_time_left_and_done_stays(make_window: MakeWindow, qtbot: QtBot) -> None:
    window = make_window(FakeEngine(FakeModel(writes("continue"), step_s=0.05, length=40)))
    seen: list[str] = []
    window.generator.tokens.connect(lambda _: seen.append(window.activity.text()))
    assert window.generate()
    qtbot.waitUntil(lambda: any("left" in line for line in seen), timeout=10_000)
    assert window.activity_bar.isVisible() and 0 < window.activity_bar.value() < 100
    line = next(line for line in seen if "left" in line)
    assert line.startswith("Writing 3 variants · ") and "tokens/s" in line and " s left" in line
    window.stop()
    qtbot.waitUntil(lambda: not window.generator.running, timeout=5000)
    assert window.activity.text().startswith("Stopped after ") and not window.activity_bar.isVisible()
    window.controls.decode.set_values({"max_new_tokens": 5})
    assert window.generate()
    qtbot.waitUntil(lambda: not window.generator.running, timeout=5000)
    done = window.activity.text()
    assert done.startswith("Done in ") and "3 variants" in done
    qtbot.wait(9000)  # longer than a status message lasts
    assert window.activity.text() == done
    window.history_list.setCurrentRow(0)
    window.restore_batch(0)  # the next action
    assert window.activity.text() != done


def test_the_estimate_words() -> None:
    request = GenerationRequest(prompt="Tom", n=2, decode=DecodeConfig(max_new_tokens=100))
    states = [VariantState(tokens=25), VariantState(tokens=25)]
    assert share_written(request, states) == 0.25
    assert writing_words(request, states, 50, 10.0) == "Writing 2 variants · 5 tokens/s · up to 30 s left"
    assert writing_words(request, states, 0, 0.5) == "Writing 2 variants: starting…"
    paraphrase = GenerationRequest(prompt="Tom ran.", n=2, task="paraphrase", decode=DecodeConfig())
    assert "left" not in writing_words(paraphrase, states, 50, 10.0)
    assert done_words(False, False, 0, 2.4, 4) == "Done in 2 s: no words were written."  # never "0 tokens/s"
    assert done_words(False, False, 600, 75.0, 4) == "Done in 1 min 15 s · 4 variants · 8 tokens/s"


def test_a_model_loads_behind_a_progress_line(make_window: MakeWindow, qtbot: QtBot) -> None:
    window = make_window(FakeEngine(FakeModel(writes("continue"))), wait_model=False)
    assert window.activity.text().startswith("Loading the model tiny…") and window.activity_bar.isVisible()
    qtbot.waitUntil(lambda: window.model is not None, timeout=5000)
    assert window.activity.text().startswith("tiny is ready") and not window.activity_bar.isVisible()


def test_a_notice_covers_no_tab(make_window: MakeWindow, qtbot: QtBot) -> None:
    window = make_window()
    window.resize(1280, 800)
    qtbot.wait(20)
    tab_bars = [window.tabs.tabBar(), window.side_tabs.tabBar()]
    before = [_rect_in(bar, window) for bar in tab_bars]
    window.messages.show_message("A long notice about something that happened to one of your documents. " * 3,
                                 "offer", [("Recover", lambda: None)])
    qtbot.wait(20)
    bar = _rect_in(window.messages, window)
    assert window.messages.isVisible() and bar.height() > 0
    for tab_bar, was in zip(tab_bars, before, strict=True):
        assert _rect_in(tab_bar, window) == was
        assert not bar.intersects(was)
        assert window.childAt(was.center()) is tab_bar  # a click meant for a tab lands on it


def test_the_start_shows_a_window_while_the_engine_imports(qtbot: QtBot, monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine's import runs beside a starting window that is already on screen and keeps painting."""

    def slow_import(name: str) -> types.ModuleType:
        time.sleep(0.3)
        return types.ModuleType(name)

    monkeypatch.setattr(app_main.importlib, "import_module", slow_import)
    starting = app_main.StartingWindow()
    qtbot.addWidget(starting)
    starting.show()
    app = QApplication.instance()
    assert isinstance(app, QApplication)
    shown: list[bool] = []
    timer = QTimer()
    timer.timeout.connect(lambda: shown.append(starting.isVisible()))
    timer.start(10)
    app_main.import_beside(app, "variorum_slow_engine")
    timer.stop()
    assert len(shown) >= 5 and all(shown)  # the UI thread kept running while the import ran


def test_an_import_error_reaches_the_start(qtbot: QtBot) -> None:
    app = QApplication.instance()
    assert isinstance(app, QApplication)
    with pytest.raises(ModuleNotFoundError):
        app_main.import_beside(app, "variorum_no_such_module")
