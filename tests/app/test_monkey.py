"""Monkey test: 600 random UI actions (typing, selections, modes, sliders, generate, stop, insert, undo, …)
must raise nothing and never hang. Exceptions inside Qt slots fail the test through pytest-qt."""

from __future__ import annotations

import dataclasses
import random
import time

from PySide6.QtCore import Qt
from PySide6.QtGui import QTextCursor
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from app.controls.modes import MODES
from tests.app.conftest import MakeWindow
from tests.app.fakes import POSG, FakeEngine, FakeModel

ACTIONS = 600
CAPS = dataclasses.replace(POSG, tasks=("continue", "paraphrase"))


def test_monkey(make_window: MakeWindow, qtbot: QtBot) -> None:
    rng = random.Random(20240601)
    window = make_window(FakeEngine(FakeModel(CAPS, step_s=0.001, length=25)))
    counts: dict[str, int] = {}

    def editor():  # type: ignore[no-untyped-def]
        return window.tabs.current()

    def type_text() -> None:
        text = rng.choice(["Once ", "the night ", "\n", "A-b, c. ", "café "])
        if text == "\n":
            qtbot.keyClick(editor(), Qt.Key.Key_Return)
        elif text.isascii():
            qtbot.keyClicks(editor(), text)
        else:  # QTest can only synthesize ASCII key presses; non-ASCII arrives like input-method text
            editor().insertPlainText(text)

    def select() -> None:
        e = editor()
        n = len(e.toPlainText())
        cursor = e.textCursor()
        cursor.setPosition(rng.randint(0, n))
        cursor.setPosition(rng.randint(0, n), QTextCursor.MoveMode.KeepAnchor)
        e.setTextCursor(cursor)

    def slider() -> None:
        box = window.controls.decode
        widgets = [s.slider for s in box.sliders.values()] + [b.slider for b in box.bias.values()]
        w = rng.choice(widgets)
        w.setValue(rng.randint(w.minimum(), w.maximum()))

    def pane_click(key: str) -> None:
        panes = window.variants.panes
        if panes:
            button = rng.choice(panes).buttons[key]
            if button.isEnabled():
                button.click()

    actions = {
        "type": type_text,
        "select": select,
        "mode": lambda: window.controls.mode.set_mode(rng.choice(MODES)),
        "slider": slider,
        "n": lambda: window.controls.decode.n.setValue(rng.randint(1, 8)),
        "generate": lambda: qtbot.keyClick(editor(), Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier),
        "stop": lambda: qtbot.keyClick(window, Qt.Key.Key_Escape),
        "insert": lambda: pane_click("insert"),
        "replace": lambda: pane_click("replace"),
        "regenerate": lambda: pane_click("regenerate"),
        "pin": lambda: pane_click("pin"),
        "ctrl-n": lambda: qtbot.keyClick(editor(), Qt.Key(Qt.Key.Key_1 + rng.randint(0, 7)),
                                         Qt.KeyboardModifier.ControlModifier),
        "undo": lambda: editor().undo(),
        "redo": lambda: editor().redo(),
        "colour": lambda: window.variants.colour_mode.setCurrentIndex(rng.choice([0, 1, 3])),
        "history": lambda: window.restore_batch(rng.randint(0, 3)),
        "new-tab": lambda: window.new_document() if window.tabs.count() < 4 else None,
        "switch-tab": lambda: window.tabs.setCurrentIndex(rng.randrange(window.tabs.count())),
        "close-tab": lambda: window.close_tab(rng.randrange(window.tabs.count())),
        "find": lambda: (window.find_bar.open(), window.find_bar.field.setText(rng.choice(["the", "x", ""]))),
        "dismiss": window.messages.dismiss,
    }
    names = list(actions)
    weights = [3 if n in ("type", "generate", "insert", "undo", "select", "slider", "stop") else 1 for n in names]
    started = time.monotonic()
    for _ in range(ACTIONS):
        name = rng.choices(names, weights)[0]
        actions[name]()
        counts[name] = counts.get(name, 0) + 1
        QApplication.processEvents()
        if rng.random() < 0.2:
            qtbot.wait(rng.choice([1, 5, 20]))
    qtbot.waitUntil(lambda: not window.generator.running, timeout=10_000)  # no hang: every run ends
    assert sum(counts.values()) == ACTIONS and counts["generate"] > 30 and counts["stop"] > 30
    assert time.monotonic() - started < 120
    assert window.isVisible() and window.tabs.count() >= 1
