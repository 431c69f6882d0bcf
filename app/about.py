"""The About box: what Variorum is, and whether the pretrained base model is installed and where.

The engine says what is installed (engine/base_model.py, `base_model_note`: the base's name, makers,
licence and package with its place on disk, or how to get it); this box only shows it.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QVBoxLayout, QWidget

from engine.base_model import base_model_note

DESCRIPTION = ("Variorum drafts many different versions of a text with neural models that run on this "
               "computer: its own small bundled models, and the pretrained base model when it is installed.")


def about_text(models_dir: Path) -> str:
    """The box's text for the user models folder `models_dir` (where the base's model folder is)."""
    return f"{DESCRIPTION}\n\n{base_model_note(models_dir)}"


class AboutDialog(QDialog):
    """Help → About Variorum: the text of `about_text`, selectable so a path can be copied."""

    def __init__(self, models_dir: Path, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("About Variorum")
        self.text = QLabel(about_text(models_dir))
        self.text.setTextFormat(Qt.TextFormat.PlainText)  # paths and names as written, never as markup
        self.text.setWordWrap(True)
        self.text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.text)
        layout.addWidget(buttons)
        self.setMinimumWidth(480)
