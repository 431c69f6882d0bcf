"""Light and dark themes (Fusion style with a palette) and the editor font size.

The dark palette sets the Disabled group on its own: Qt's setColor(role, colour) without a group paints
disabled widgets exactly like enabled ones, so disabled buttons looked pressable.
"""

from __future__ import annotations

from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication

Role = QPalette.ColorRole
DARK = {
    Role.Window: "#2b2b2b", Role.WindowText: "#e6e6e6",
    Role.Base: "#1e1e1e", Role.AlternateBase: "#2b2b2b",
    Role.Text: "#e6e6e6", Role.Button: "#3a3a3a",
    Role.ButtonText: "#e6e6e6", Role.Highlight: "#3d6fb4",
    Role.HighlightedText: "#ffffff", Role.ToolTipBase: "#3a3a3a",
    Role.ToolTipText: "#e6e6e6", Role.PlaceholderText: "#8a8a8a",
    Role.Light: "#505050", Role.Midlight: "#444444", Role.Mid: "#303030", Role.Dark: "#202020",
    Role.Shadow: "#141414", Role.Link: "#8ab4f8", Role.LinkVisited: "#c58af9", Role.BrightText: "#ff8a80",
}
DARK_DISABLED = {  # dimmed text on a flatter button
    Role.WindowText: "#7a7a7a", Role.Text: "#7a7a7a", Role.ButtonText: "#7a7a7a",
    Role.Button: "#2f2f2f", Role.Base: "#262626", Role.Highlight: "#4a4a4a", Role.HighlightedText: "#9a9a9a",
    Role.PlaceholderText: "#5e5e5e",
}


def apply_theme(app: QApplication, theme: str) -> None:
    if app.style().name().lower() != "fusion":  # a new style object restyles every widget; make it once
        app.setStyle("Fusion")
    palette = app.style().standardPalette()
    if theme == "dark":
        for role, colour in DARK.items():
            palette.setColor(role, QColor(colour))
        for role, colour in DARK_DISABLED.items():
            palette.setColor(QPalette.ColorGroup.Disabled, role, QColor(colour))
    app.setPalette(palette)


def error_text_colour() -> str:
    """A red that reads on the current window colour: the light theme's dark red is nearly
    invisible on the dark theme's grey, so dark windows get a light red."""
    app = QApplication.instance()
    window = app.palette().color(Role.Window) if isinstance(app, QApplication) else QColor("#ffffff")
    return "#ff8a80" if window.lightness() < 128 else "#c0392b"
