"""Mode choice (Continue / Story / Abstract / Paraphrase) and each mode's inputs; modes the bundle
cannot do are disabled with the reason shown."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFormLayout,
    QGroupBox,
    QLabel,
    QLineEdit,
    QSizePolicy,
    QSpinBox,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from app.controls.modes import MAX_SENTENCES, MODE_LABELS, MODES, ModeInputs, mode_unavailable_reason

ORDER_LABELS = {"model": "Model's choice", "first": "Start with sentence…", "full": "Full order…"}
HINTS = {
    "continue": "Writes on from the cursor, using the text before it.",
    "paraphrase": "Rewrites the passage you select in the document, in N different ways.",
}


class ModeBox(QGroupBox):
    """The mode picker and its input fields."""

    mode_changed = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Mode", parent)
        self.picker = QComboBox()
        self.picker.setAccessibleName("Mode")
        self.picker.setToolTip("What to write: continue your text, a story or abstract from a title and "
                               "keywords, or alternatives to a selected passage.")
        for mode in MODES:
            self.picker.addItem(MODE_LABELS[mode], mode)
        self.reason = QLabel(wordWrap=True)
        self.reason.setStyleSheet("color: #c0392b;")
        self.stack = QStackedWidget()
        # named title_edit, not title: that would hide QGroupBox.title()
        self.title_edit = QLineEdit(placeholderText="e.g. The lost key")
        self.title_edit.setAccessibleName("Title")
        self.title_edit.setToolTip("The title the story or abstract is written for (required).")
        self.keywords = QLineEdit(placeholderText="comma, separated, keywords")
        self.keywords.setAccessibleName("Keywords")
        self.keywords.setToolTip("Words the text should use, in any order. Leave empty to let the model choose.")
        self.sentences = QSpinBox(minimum=1, maximum=MAX_SENTENCES, value=5)
        self.sentences.setAccessibleName("Number of sentences")
        self.sentences.setToolTip("How many sentences to write.")
        self.order = QComboBox()
        self.order.setAccessibleName("Sentence order")
        self.order.setToolTip("Let the model decide the order the sentences are written in, pick the one "
                              "it starts with (different variants start differently), or fix the whole order.")
        for key, label in ORDER_LABELS.items():
            self.order.addItem(label, key)
        self.first = QSpinBox(minimum=1, maximum=MAX_SENTENCES, value=1)
        self.first.setAccessibleName("First sentence")
        self.full = QLineEdit(placeholderText="e.g. 2, 1, 3, 5, 4")
        self.full.setAccessibleName("Full sentence order")
        planned = QWidget()
        form = QFormLayout(planned)
        form.addRow("Title", self.title_edit)
        form.addRow("Keywords", self.keywords)
        form.addRow("Sentences", self.sentences)
        form.addRow("Order", self.order)
        form.addRow("First sentence", self.first)
        form.addRow("Full order", self.full)
        self.pages = {
            "continue": self.stack.addWidget(QLabel(HINTS["continue"], wordWrap=True)),
            "planned": self.stack.addWidget(planned),
            "paraphrase": self.stack.addWidget(QLabel(HINTS["paraphrase"], wordWrap=True)),
        }
        layout = QVBoxLayout(self)
        layout.addWidget(self.picker)
        layout.addWidget(self.reason)
        layout.addWidget(self.stack)
        self.picker.currentIndexChanged.connect(self._on_mode)
        self.order.currentIndexChanged.connect(lambda _: self._sync_order())
        self._capabilities: dict[str, Any] = {"tasks": ["continue"]}
        self._on_mode()

    def mode(self) -> str:
        return str(self.picker.currentData())

    def set_mode(self, mode: str) -> None:
        self.picker.setCurrentIndex(MODES.index(mode))

    def set_capabilities(self, capabilities: dict[str, Any]) -> None:
        self._capabilities = capabilities
        for index, mode in enumerate(MODES):
            reason = mode_unavailable_reason(mode, capabilities)
            self.picker.setItemData(index, reason or MODE_LABELS[mode], 3)  # tooltip
        self._on_mode()

    def unavailable_reason(self) -> str:
        return mode_unavailable_reason(self.mode(), self._capabilities)

    def inputs(self) -> ModeInputs:
        return ModeInputs(
            title=self.title_edit.text(), keywords=self.keywords.text(), num_sentences=self.sentences.value(),
            order=str(self.order.currentData()), first_sentence=self.first.value(), full_order=self.full.text(),
        )

    def _on_mode(self) -> None:
        mode = self.mode()
        self.stack.setCurrentIndex(self.pages["planned" if mode in ("story", "abstract") else mode])
        for index in range(self.stack.count()):  # size the stack to the shown page only
            policy = QSizePolicy.Policy.Preferred if index == self.stack.currentIndex() else QSizePolicy.Policy.Ignored
            page = self.stack.widget(index)
            assert page is not None  # index < count()
            page.setSizePolicy(policy, policy)
        self.stack.adjustSize()
        self.reason.setText(self.unavailable_reason())
        self.reason.setVisible(bool(self.reason.text()))
        self._sync_order()
        self.mode_changed.emit(mode)

    def _sync_order(self) -> None:
        order = self.order.currentData()
        self.first.setEnabled(order == "first")
        self.full.setEnabled(order == "full")
