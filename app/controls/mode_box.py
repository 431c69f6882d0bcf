"""Mode choice (Continue / Story / Abstract / Paraphrase) and each mode's inputs.

Under the picker one line says what the shown mode does (with the real number of variants), or, in red,
why the loaded model cannot do it; the same line holds either, and keeps room for `DESCRIPTION_LINES`
lines, so a reason coming or going never moves the controls below. A mode whose model is loading is not
an error: the line keeps its description and Generate waits (`set_loading`). A mode the loaded bundle
cannot do reports itself unusable (`usable_changed`, so Generate is disabled); a mode that no installed
bundle does at all is greyed out in the picker and named under it in a writer's words, its tooltip giving
the exact command that builds a model for it. `mode_picked` fires only when the writer picks a mode (not
when capabilities change), so the window can load that mode's model."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFormLayout,
    QGroupBox,
    QLabel,
    QLineEdit,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from app.controls.modes import (
    MAX_SENTENCES,
    MODE_LABELS,
    MODES,
    ModeInputs,
    max_sentences,
    mode_unavailable_reason,
)
from app.theme import error_text_colour
from engine.bundles.choice import missing_model_message
from engine.controls import Capabilities

ORDER_LABELS = {"model": "Model's choice", "first": "Start with sentence…", "full": "Full order…"}
DESCRIPTIONS = {  # {ways}: the number of variants in words ("one way", "4 different ways")
    "continue": "Writes on from the cursor, using the text before it, in {ways}.",
    "story": "Writes a short story from the title and keywords below, in {ways}.",
    "abstract": "Writes an abstract from the title and keywords below, in {ways}.",
    "paraphrase": "Rewrites the passage you select in the document, in {ways}.",
}
DESCRIPTION_LINES = 3  # room kept under the picker: a description or a reason fits without moving the controls


class ModeBox(QGroupBox):
    """The mode picker and its input fields."""

    mode_changed = Signal(str)
    mode_picked = Signal(str)  # the writer chose this mode in the picker
    usable_changed = Signal(bool)  # whether the loaded model can do the shown mode

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Mode", parent)
        self.picker = QComboBox()
        self.picker.setAccessibleName("Mode")
        self.picker.setToolTip("What to write: continue your text, a story or abstract from a title and "
                               "keywords, or alternatives to a selected passage.")
        for mode in MODES:
            self.picker.addItem(MODE_LABELS[mode], mode)
        self.missing = QLabel(wordWrap=True)  # the greyed-out modes, said in the window
        self.missing.setAccessibleName("Modes not available")
        self.description = QLabel(wordWrap=True)  # what the mode does, or why it cannot be used now
        self.description.setAccessibleName("Mode description")
        self.description.setMinimumHeight(self.description.fontMetrics().lineSpacing() * DESCRIPTION_LINES)
        self.description.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        self._variants = 1
        self._loading: set[str] = set()  # the tasks of the model being loaded
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
        self.planned = QWidget()  # the inputs of a story or abstract
        form = QFormLayout(self.planned)
        form.setContentsMargins(0, 0, 0, 0)
        form.addRow("Title", self.title_edit)
        form.addRow("Keywords", self.keywords)
        form.addRow("Sentences", self.sentences)
        form.addRow("Order", self.order)
        form.addRow("First sentence", self.first)
        form.addRow("Full order", self.full)
        layout = QVBoxLayout(self)
        layout.addWidget(self.picker)
        layout.addWidget(self.missing)
        layout.addWidget(self.description)
        layout.addWidget(self.planned)
        self.picker.currentIndexChanged.connect(self._on_mode)
        self.picker.activated.connect(lambda index: self.mode_picked.emit(MODES[index]))
        self.order.currentIndexChanged.connect(lambda _: self._sync_order())
        self._capabilities = Capabilities()
        self._installed: set[str] = set(MODES)  # modes some installed bundle does
        self._on_mode()

    def mode(self) -> str:
        return str(self.picker.currentData())

    def set_mode(self, mode: str) -> None:
        self.picker.setCurrentIndex(MODES.index(mode))

    def set_capabilities(self, capabilities: Capabilities) -> None:
        self._capabilities = capabilities
        for box in (self.sentences, self.first):
            box.setMaximum(max_sentences(capabilities))
        self._sync_items()
        self._on_mode()

    def set_installed_tasks(self, tasks: set[str]) -> None:
        """The tasks of every usable installed bundle: modes outside them are greyed out."""
        self._installed = set(tasks)
        self._sync_items()
        self._on_mode()

    def is_installed(self, mode: str) -> bool:
        """True when some installed bundle, or the loaded one, does `mode`."""
        return mode in self._installed or mode in self._capabilities.tasks

    def _sync_items(self) -> None:
        items = self.picker.model()
        for index, mode in enumerate(MODES):
            installed = self.is_installed(mode)
            reason = mode_unavailable_reason(mode, self._capabilities)
            tip = missing_model_message(mode) if not installed else reason or MODE_LABELS[mode]
            self.picker.setItemData(index, tip, Qt.ItemDataRole.ToolTipRole)
            items.item(index).setEnabled(installed)  # type: ignore[attr-defined]
        missing = [m for m in MODES if not self.is_installed(m)]
        self.missing.setText(missing_modes_text(missing))
        self.missing.setToolTip("\n\n".join(missing_model_message(m) for m in missing))
        self.missing.setVisible(bool(missing))

    def set_variant_count(self, n: int) -> None:
        """The number of variants a Generate writes, as the description says it."""
        self._variants = n
        self._show_description()

    def set_loading(self, tasks: set[str]) -> None:
        """A model doing `tasks` is loading (empty: none is): its modes wait for it without an error."""
        self._loading = set(tasks)
        self._on_mode()

    def is_loading(self) -> bool:
        """True while the model for the shown mode is loading."""
        mode = self.mode()
        return mode in self._loading and mode not in self._capabilities.tasks

    def unavailable_reason(self) -> str:
        if self.is_loading():
            return f"The model for {MODE_LABELS[self.mode()]} is still loading; Generate works once it is ready."
        if not self.is_installed(self.mode()):
            return missing_modes_text([self.mode()])
        return mode_unavailable_reason(self.mode(), self._capabilities)

    def plan_values(self) -> dict[str, Any]:
        """The fields a story or abstract is planned with, as plain values (kept with each batch)."""
        return {"title": self.title_edit.text(), "keywords": self.keywords.text(),
                "num_sentences": self.sentences.value(), "order": str(self.order.currentData()),
                "first_sentence": self.first.value(), "full_order": self.full.text()}

    def set_inputs(self, mode: str, values: dict[str, Any]) -> None:
        """Show `mode` with the plan fields of `values` (a batch's `plan_values()`); unknown or bad ones are skipped."""
        if mode in MODES:
            self.set_mode(mode)
        for key, edit in (("title", self.title_edit), ("keywords", self.keywords), ("full_order", self.full)):
            if isinstance(values.get(key), str):
                edit.setText(values[key])
        for key, box in (("num_sentences", self.sentences), ("first_sentence", self.first)):
            if isinstance(values.get(key), int):
                box.setValue(values[key])
        index = self.order.findData(values.get("order"))
        if index >= 0:
            self.order.setCurrentIndex(index)

    def inputs(self) -> ModeInputs:
        return ModeInputs(
            title=self.title_edit.text(), keywords=self.keywords.text(), num_sentences=self.sentences.value(),
            order=str(self.order.currentData()), first_sentence=self.first.value(), full_order=self.full.text(),
        )

    def _on_mode(self) -> None:
        mode = self.mode()
        self.planned.setVisible(mode in ("story", "abstract"))
        self._show_description()
        self._sync_order()
        self.usable_changed.emit(not self.unavailable_reason())
        self.mode_changed.emit(mode)

    def _show_description(self) -> None:
        """The mode's description, or in red why it cannot be used (a loading model is no error)."""
        reason = "" if self.is_loading() else self.unavailable_reason()
        ways = "one way" if self._variants == 1 else f"{self._variants} different ways"
        self.description.setText(reason or DESCRIPTIONS[self.mode()].format(ways=ways))
        self.description.setStyleSheet(f"color: {error_text_colour()};" if reason else "")

    def _sync_order(self) -> None:
        order = self.order.currentData()
        self.first.setEnabled(order == "first")
        self.full.setEnabled(order == "full")


def missing_modes_text(modes: list[str]) -> str:
    """The greyed-out modes in a writer's words ("" when none is)."""
    if not modes:
        return ""
    names = " and ".join(MODE_LABELS[m] for m in modes)
    it = "it" if len(modes) == 1 else "them"
    return (f"{names}: no model for {it} came with this copy of Variorum, so {it} cannot be used yet "
            "(hover here to see how to add one).")
