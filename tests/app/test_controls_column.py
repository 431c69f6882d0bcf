"""The controls column stays put and says what it means: the wheel scrolls the column rather than changing a
control in passing, a mode whose model is loading shows no error, a reason never moves the controls below,
and the mode's description names the real number of variants at the column's full width."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QPoint, QPointF
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QComboBox, QScrollArea, QWidget
from pytestqt.qtbot import QtBot

from app.controls.modes import MODES
from engine.front_door import BundleInfo
from tests.app.conftest import MakeWindow
from tests.app.fakes import FakeEngine, FakeModel, writes


def _wheel(widget: QWidget, steps: int = -3) -> None:
    """Turn the mouse wheel over the middle of `widget` (negative: towards the writer, i.e. scroll down), as the
    window system does: only such events go on to the parents when the widget declines them."""
    window = widget.window()
    handle = window.windowHandle()
    assert handle is not None
    QTest.wheelEvent(handle, QPointF(widget.mapTo(window, widget.rect().center())), QPoint(0, 120 * steps))
    QApplication.processEvents()


def _value(control: QWidget) -> int:
    return control.currentIndex() if isinstance(control, QComboBox) else control.value()  # type: ignore[attr-defined]


def test_the_wheel_over_a_slider_scrolls_the_column_until_the_slider_is_focused(make_window: MakeWindow,
                                                                             qtbot: QtBot) -> None:
    window = make_window()
    window.resize(1280, 500)  # short enough that the column scrolls
    qtbot.waitExposed(window)
    qtbot.wait(50)
    scroll = window.controls.findChild(QScrollArea)
    assert scroll is not None and scroll.verticalScrollBar().maximum() > 0
    bar = scroll.verticalScrollBar()
    slider = window.controls.decode.sliders["top_p"]
    for control in (window.controls.model.picker, window.controls.mode.picker, window.controls.decode.n,
                    slider.slider):
        scroll.ensureWidgetVisible(control, 0, 0)
        down = bar.value() < bar.maximum()  # scroll the way there is room for
        at, value = bar.value(), _value(control)
        _wheel(control, -3 if down else 3)
        assert _value(control) == value
        assert (bar.value() > at) if down else (bar.value() < at)  # the column scrolled instead
    before = slider.value()
    slider.slider.setFocus()
    qtbot.waitUntil(slider.slider.hasFocus)
    _wheel(slider.slider)
    assert slider.value() != before  # a focused slider takes the wheel


class LoadingEngine(FakeEngine):
    """A Continue model loaded at start, and a Paraphrase model that loads only when the test says so."""

    def __init__(self, folder: Path) -> None:
        lm = BundleInfo(folder / "lm", "lm", "softmax", "An LM.", tasks=("continue",))
        para = BundleInfo(folder / "para", "para", "softmax", "A paraphraser.", tasks=("paraphrase",))
        super().__init__(bundles=[lm, para])
        self.models = {"lm": FakeModel(writes("continue")), "para": FakeModel(writes("paraphrase"))}
        self.release = False
        self.loads: list[str] = []

    def load(self, path: Path, device: str = "auto", runtime: str = "auto") -> FakeModel:
        self.loads.append(Path(path).name)
        while Path(path).name == "para" and not self.release:
            __import__("time").sleep(0.01)
        return self.models[Path(path).name]


def test_no_error_while_the_modes_model_loads_and_a_reason_never_moves_the_controls(make_window: MakeWindow,
                                                                                     qtbot: QtBot,
                                                                                     tmp_path: Path) -> None:
    engine = LoadingEngine(tmp_path)
    window = make_window(engine)
    qtbot.wait(20)
    mode = window.controls.mode
    below = window.controls.decode.n
    where = below.mapTo(window, QPoint(0, 0))
    mode.picker.setCurrentIndex(MODES.index("paraphrase"))
    mode.picker.activated.emit(MODES.index("paraphrase"))  # the writer's pick: the paraphraser starts loading
    qtbot.wait(20)
    assert "needs a model trained for it" not in mode.description.text()
    assert mode.description.text().startswith("Rewrites the passage")
    assert not window.controls.generate.isEnabled()  # it waits for the model
    assert window.messages.kind == ""
    mode.picker.setCurrentIndex(MODES.index("continue"))  # the writer looks at Continue and comes back
    mode.picker.setCurrentIndex(MODES.index("paraphrase"))
    mode.picker.activated.emit(MODES.index("paraphrase"))
    assert "needs a model trained for it" not in mode.description.text()
    assert engine.loads == ["lm", "para"]  # the load on its way is not started again
    engine.release = True
    qtbot.waitUntil(lambda: window.model is engine.models["para"], timeout=5000)
    assert window.controls.generate.isEnabled()
    qtbot.wait(20)
    assert below.mapTo(window, QPoint(0, 0)) == where
    mode.set_capabilities(writes("continue"))  # a real reason now: said in red, in the same place
    qtbot.wait(20)
    assert "Paraphrase needs a model trained for it" in mode.description.text()
    assert below.mapTo(window, QPoint(0, 0)) == where


def test_the_description_names_the_number_of_variants(make_window: MakeWindow) -> None:
    window = make_window(FakeEngine(FakeModel(writes("continue", "paraphrase"))))
    window.controls.mode.set_mode("paraphrase")
    window.controls.decode.n.setValue(3)
    text = window.controls.mode.description.text()
    assert "in 3 different ways" in text and " N " not in text
    assert "Write 3 variants" in window.controls.generate.toolTip()
    window.controls.decode.n.setValue(1)
    assert "in one way" in window.controls.mode.description.text()


def test_the_description_keeps_the_full_width_after_a_model_change(make_window: MakeWindow, qtbot: QtBot) -> None:
    window = make_window(FakeEngine(FakeModel(writes("continue", "paraphrase"))))
    mode = window.controls.mode
    mode.set_mode("paraphrase")
    qtbot.wait(20)
    full = mode.description.width()
    assert full >= mode.contentsRect().width() - 40
    for tasks in (("continue",), ("continue", "paraphrase"), ("story", "paraphrase")):
        window._on_loaded(Path("/fake/other"), FakeModel(writes(*tasks)))
        assert mode.description.width() == full
        QApplication.processEvents()
        assert mode.description.width() == full


def test_a_load_started_later_wins_over_one_still_running(make_window: MakeWindow, qtbot: QtBot,
                                                           tmp_path: Path) -> None:
    engine = LoadingEngine(tmp_path)
    window = make_window(engine)
    window.load_bundle(tmp_path / "para")  # slow: waits for the test
    window.load_bundle(tmp_path / "lm")  # the writer changed their mind
    qtbot.waitUntil(lambda: window.activity.text().startswith("lm is ready"), timeout=5000)
    engine.release = True
    qtbot.wait(200)
    assert window.model is engine.models["lm"] and window.model_name == "lm"
