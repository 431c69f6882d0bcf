"""The window fits a 1280×800 screen with every control reachable, remembers its size and column widths,
and a notice never moves the controls."""

from __future__ import annotations

from PySide6.QtCore import QPoint
from PySide6.QtWidgets import QScrollArea, QWidget
from pytestqt.qtbot import QtBot

from engine.controls import Capabilities, ClassGroups, HeadCapabilities, Termination
from tests.app.conftest import MakeWindow
from tests.app.fakes import POSG, FakeEngine, FakeModel

F2_NMST = Capabilities(HeadCapabilities("f2+nmst", 5, classes=ClassGroups((2, 3, 4, 5)),
                                        termination=Termination("nmst", 1e-5)))


def _controls_scroll(window: QWidget) -> QScrollArea:
    scroll = window.controls.findChild(QScrollArea)  # type: ignore[attr-defined]
    assert scroll is not None
    return scroll


def test_the_controls_column_fits_at_1280x800_and_scrolls_rather_than_clips(make_window: MakeWindow,
                                                                             qtbot: QtBot) -> None:
    for caps in (F2_NMST, POSG):
        window = make_window(FakeEngine(FakeModel(caps)))
        assert (window.width(), window.height()) == (1280, 800)  # the default size
        qtbot.wait(20)
        scroll = _controls_scroll(window)
        inner = scroll.widget()
        assert inner.minimumSizeHint().width() <= scroll.viewport().width()  # nothing cut on the right
        assert inner.width() <= scroll.viewport().width()
        assert scroll.verticalScrollBar().maximum() > 0 or inner.height() <= scroll.viewport().height()


def test_window_size_place_and_column_widths_are_remembered(make_window: MakeWindow, qtbot: QtBot) -> None:
    window = make_window()
    window.resize(1100, 700)
    window.move(40, 30)
    window.splitter.setSizes([300, 450, 330])
    qtbot.wait(20)
    sizes = window.splitter.sizes()
    window.close()
    again = make_window()
    qtbot.wait(20)
    assert (again.width(), again.height()) == (1100, 700) and (again.x(), again.y()) == (40, 30)
    assert again.splitter.sizes() == sizes


def test_a_notice_does_not_move_the_controls(make_window: MakeWindow, qtbot: QtBot) -> None:
    window = make_window()
    qtbot.wait(20)
    generate = window.controls.generate
    before = generate.mapTo(window, QPoint(0, 0)), window.tabs.mapTo(window, QPoint(0, 0))
    window.show_error("A story needs a title: type one in the Title field.")
    qtbot.wait(20)
    assert window.messages.isVisible() and window.messages.height() > 0
    assert (generate.mapTo(window, QPoint(0, 0)), window.tabs.mapTo(window, QPoint(0, 0))) == before
    window.messages.dismiss()
    qtbot.wait(20)
    assert (generate.mapTo(window, QPoint(0, 0)), window.tabs.mapTo(window, QPoint(0, 0))) == before
