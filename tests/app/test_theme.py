"""Dark theme legibility: error text readable on its bar, disabled buttons visibly dimmed (measured on pixels)."""

from __future__ import annotations

from collections import Counter

from PySide6.QtGui import QColor
from PySide6.QtWidgets import QPushButton, QWidget
from pytestqt.qtbot import QtBot

from tests.app.conftest import MakeWindow

READABLE = 4.5  # WCAG AA contrast for body text


def _luminance(colour: QColor) -> float:
    def channel(c: float) -> float:
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    return 0.2126 * channel(colour.redF()) + 0.7152 * channel(colour.greenF()) + 0.0722 * channel(colour.blueF())


def _contrast(a: QColor, b: QColor) -> float:
    high, low = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def _text_contrast(widget: QWidget, part: QWidget | None = None) -> float:
    """Contrast of the rendered text against the most common (background) pixel colour of `widget`,
    or of the area of its child `part` rendered with everything behind it."""
    image = (widget.grab(part.geometry()) if part is not None else widget.grab()).toImage()
    pixels = Counter(image.pixel(x, y) for x in range(image.width()) for y in range(image.height()))
    background = QColor.fromRgb(pixels.most_common(1)[0][0])
    return max(_contrast(QColor.fromRgb(p), background) for p in pixels)


def test_dark_theme_error_message_is_readable(make_window: MakeWindow, qtbot: QtBot) -> None:
    window = make_window()
    window.dark_action.trigger()
    window.show_error("Could not load the model tiny: the file is damaged.")
    qtbot.wait(20)  # the new style sheet is applied on the next event-loop pass
    assert window.messages.isVisible() and window.settings.theme == "dark"
    assert _text_contrast(window.messages, window.messages.label) >= READABLE


def test_dark_theme_disabled_buttons_look_disabled(make_window: MakeWindow, qtbot: QtBot) -> None:
    window = make_window()
    window.dark_action.trigger()
    enabled, disabled = QPushButton("Generate"), QPushButton("Generate")
    disabled.setEnabled(False)
    for button in (enabled, disabled):
        qtbot.addWidget(button)
        button.show()
    assert _text_contrast(enabled) >= READABLE
    assert _text_contrast(disabled) < _text_contrast(enabled) / 2


def test_dark_theme_model_box_error_is_readable(make_window: MakeWindow, qtbot: QtBot) -> None:
    window = make_window()
    window.dark_action.trigger()
    status = window.controls.model.status
    status.setMinimumWidth(300)
    window.controls.model.set_status("Could not load the model: the file is damaged.", error=True)
    qtbot.wait(20)
    assert _text_contrast(window.controls.model, status) >= READABLE
