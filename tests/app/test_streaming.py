"""Streaming into N panes, Stop within 100 ms, generation failures, regenerate — fake and real tiny engines."""

from __future__ import annotations

import time
from pathlib import Path

from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from engine.front_door import Engine
from tests.app.conftest import MakeWindow
from tests.app.fakes import SOFTMAX, WORDS, FakeEngine, FakeModel


def test_streaming_fills_all_panes_concurrently(make_window: MakeWindow, qtbot: QtBot) -> None:
    window = make_window(FakeEngine(FakeModel(SOFTMAX, step_s=0.02, length=30)))
    window.controls.decode.n.setValue(4)
    assert window.generate()
    # while the generation is still running, every pane already shows text: they stream side by side
    qtbot.waitUntil(lambda: all(p.state.text for p in window.variants.panes), timeout=5000)
    assert window.generator.running
    assert len(window.variants.panes) == 4
    qtbot.waitUntil(lambda: not window.generator.running, timeout=10_000)
    for i, pane in enumerate(window.variants.panes):
        expected = "".join(WORDS[(step + 3 * i) % len(WORDS)] for step in range(30))
        assert pane.state.text == expected == pane.text.toPlainText()
        assert pane.state.seed is not None and pane.state.finish_reason == "length"


def test_stop_ends_generation_within_100ms(make_window: MakeWindow, qtbot: QtBot) -> None:
    window = make_window(FakeEngine(FakeModel(SOFTMAX, step_s=0.005, length=100_000)))
    window.generate()
    qtbot.waitUntil(lambda: window.variants.panes[0].state.tokens > 5, timeout=5000)
    thread = window.generator.worker_thread
    assert thread is not None
    start = time.perf_counter()
    with qtbot.waitSignal(window.generator.finished, timeout=1000) as blocker:
        qtbot.keyClick(window, Qt.Key.Key_Escape)  # Esc is the Stop shortcut
    elapsed = time.perf_counter() - start
    assert elapsed < 0.1, f"stop took {elapsed * 1000:.0f} ms"
    assert not thread.is_alive()
    assert blocker.args[0].stopped
    assert window.variants.panes[0].state.finish_reason == "cancelled"
    assert window.controls.generate.isEnabled() and not window.controls.stop.isEnabled()


def test_generation_failure_is_reported_and_app_keeps_working(make_window: MakeWindow, qtbot: QtBot) -> None:
    model = FakeModel(SOFTMAX, length=10)
    model.fail_at = 3
    window = make_window(FakeEngine(model))
    window.generate()
    qtbot.waitUntil(lambda: not window.generator.running, timeout=5000)
    assert window.messages.kind == "error" and "Generation failed" in window.messages.label.text()
    model.fail_at = None
    window.generate()
    qtbot.waitUntil(lambda: not window.generator.running, timeout=5000)
    assert all(p.state.finish_reason == "length" for p in window.variants.panes)


def test_regenerate_rewrites_one_pane_only(make_window: MakeWindow, qtbot: QtBot) -> None:
    window = make_window(FakeEngine(FakeModel(SOFTMAX, length=6)))
    window.generate()
    qtbot.waitUntil(lambda: not window.generator.running, timeout=5000)
    before = [p.state.text for p in window.variants.panes]
    window.variants.panes[1].buttons["regenerate"].click()
    qtbot.waitUntil(lambda: not window.generator.running, timeout=5000)
    assert window.engine.model.requests[-1].n == 1  # type: ignore[attr-defined]
    after = [p.state.text for p in window.variants.panes]
    assert after[0] == before[0] and after[2] == before[2]
    assert after[1] == "".join(WORDS[:6])  # the fake's variant 0 text, now in pane 2


def test_real_tiny_bundle_streams_and_stops(make_window: MakeWindow, qtbot: QtBot, tiny_bundle: Path) -> None:
    window = make_window(Engine(search_dirs=[tiny_bundle.parent]))
    window.tabs.current().setPlainText("Once upon a time")
    # real words off: this untrained model's byte pieces seldom spell a word, so under real words only a
    # variant may end within two tokens, and this test is about streaming and stopping a long generation
    window.controls.decode.set_values({"n": 3, "max_new_tokens": 20, "seed_fixed": True, "seed": 5,
                                       "real_words": False, "drafts": 1})
    window.generate()
    qtbot.waitUntil(lambda: not window.generator.running, timeout=20_000)
    panes = window.variants.panes
    assert [p.state.seed for p in panes] == [5, 6, 7]
    # a text widget shows a carriage return (which this untrained model's byte-level output may hold) as a line break
    assert all(p.state.tokens > 0 and p.text.toPlainText() == p.state.text.replace("\r\n", "\n").replace("\r", "\n")
               for p in panes)
    # and a long real generation stops promptly
    window.controls.decode.set_values({"max_new_tokens": 1000})
    window.generate()
    qtbot.waitUntil(lambda: window.variants.panes[0].state.tokens > 2, timeout=10_000)
    thread = window.generator.worker_thread
    assert thread is not None
    start = time.perf_counter()
    with qtbot.waitSignal(window.generator.finished, timeout=2000) as blocker:
        window.stop()
    # the strict 100 ms check is test_stop_ends_generation_within_100ms; a real model adds one model step,
    # and a 2-core machine running the rest of the suite has stalled it past 0.5 s once; 1 s is still a
    # small part of the time 1000 tokens take
    assert time.perf_counter() - start < 1.0 and not thread.is_alive()
    # a variant of this untrained model may end on its own (eos) before the stop reaches it; the rest are cancelled
    reasons = [p.state.finish_reason for p in window.variants.panes]
    assert blocker.args[0].stopped and "cancelled" in reasons and set(reasons) <= {"cancelled", "eos"}
