"""Variant count, seed, the "Word choice" controls, and the method boxes (F², POSG, termination) built from
the bundle's capabilities; every decoding control comes from its field's declaration (app.controls.spec), and
starts where the loaded model says (its head, its bundle's "decode_starts")."""

from __future__ import annotations

import random
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from app.controls.seed_box import SeedBox
from app.controls.spec import (
    BUNDLE_STARTS_FOR,
    DEFAULT_SEED,
    MODEL_STARTS,
    POS_BIAS_FIELD,
    SAMPLING,
    STARTS_FOR,
    SliderSpec,
    default_values,
    pos_bias_groups,
    start_beside,
    visible_method_controls,
)
from app.controls.widgets import FactorSlider, ValueSlider
from engine.controls import DEFAULT_VARIANTS, MAX_VARIANTS, Capabilities
from engine.decode_fields import (
    FIELDS,
    GUIDANCE,
    MAX_SEED,
    POS_BIAS,
    POS_BIAS_FACTORS,
    SEED,
    TOP_K,
    TOP_P,
    Checkbox,
    number_text,
)

TERMINATION_WORDS = {
    "nmst": "Every variant is sure to end: the longer it gets, the likelier it is to stop.",
    "st": "Every variant is sure to end: its chance of stopping never goes down as it grows.",
}
TERMINATION_NAMES = {"nmst": "non-monotonic self-terminating (NMST) head", "st": "self-terminating (ST) head"}


class DecodeBox(QWidget):
    """All decoding controls; `values()` / `set_values()` round-trip through presets and settings."""

    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.sliders: dict[str, ValueSlider] = {}
        self.checks: dict[str, QCheckBox] = {}  # the switches (real words only, end at a full sentence)
        self.bias: dict[str, FactorSlider] = {}
        self._stored: dict[str, Any] = default_values()  # values of controls not shown right now
        # The loaded model's capabilities (None before a model loads), and the model whose starts the controls'
        # values are at or were chosen beside: its head's groups and its bundle's starts (see `set_values`).
        self._capabilities: Capabilities | None = None
        self._starts_for = ""
        self._bundle_starts_for: dict[str, float] = {}
        self._task = "continue"  # the mode's task: guidance is shown only where it acts (`set_task`)
        self.n = QSpinBox(minimum=1, maximum=MAX_VARIANTS, value=DEFAULT_VARIANTS)
        self.n.setAccessibleName("Number of variants")
        self.n.setToolTip("How many different versions to write at once (1–8).")
        self.seed_fixed = QCheckBox("Same variants each time")
        self.seed_fixed.setToolTip("Fixed seed. Off: every Generate gives new variants. On: the same settings "
                                   "give the same variants again (variant i uses seed + i).")
        self.seed = SeedBox(DEFAULT_SEED)
        self.seed.setAccessibleName(SEED.label)
        self.seed.setToolTip(SEED.help)
        dice = QPushButton("New")
        dice.setToolTip("Pick a new random seed.")
        dice.clicked.connect(lambda: self.seed.setValue(random.randrange(MAX_SEED + 1)))
        seed_row = QHBoxLayout()
        seed_row.addWidget(self.seed, 1)
        seed_row.addWidget(dice)
        basics = QGroupBox("Variants")
        form = QFormLayout(basics)
        form.addRow("Variants", self.n)
        form.addRow(self.seed_fixed)
        form.addRow(SEED.label, seed_row)
        sampling = self._sampling_box()
        self.f2_box = QGroupBox("Common and rare words")
        self.f2_box.setToolTip("F² frequency classes: the model picks how common a word is, then the word.")
        self.posg_box = QGroupBox("Kinds of word")
        self.posg_box.setToolTip("POS-guided sampling (POSG): the model picks a part of speech, then the word.")
        self.termination = QLabel(wordWrap=True)
        self.layout_ = QVBoxLayout(self)
        self.layout_.setContentsMargins(0, 0, 0, 0)
        for part in (basics, sampling, self.f2_box, self.posg_box, self.termination):
            self.layout_.addWidget(part)
        self.seed_fixed.toggled.connect(self.seed.setEnabled)
        self.seed.setEnabled(False)
        for signal in (self.n.valueChanged, self.seed.valueChanged, self.seed_fixed.toggled):
            signal.connect(lambda *_: self.changed.emit())
        self._build_method_boxes(Capabilities())

    def _sampling_box(self) -> QGroupBox:
        """The "Word choice" box: the switches and sliders every head honours, in their declared order."""
        sampling = QGroupBox("Word choice")
        self.sampling_form = QFormLayout(sampling)
        sliders = {spec.field: spec for spec in SAMPLING}
        for field in FIELDS:
            if isinstance(field.control, Checkbox):
                check = self.checks[field.name] = QCheckBox(field.label)
                check.setChecked(bool(field.writer_start))
                check.setToolTip(field.help)
                check.toggled.connect(lambda *_: self.changed.emit())
                self.sampling_form.addRow(check)
            elif field.name in sliders:
                self.sampling_form.addRow(field.label, self._slider(sliders[field.name]))
        return sampling

    def _slider(self, spec: SliderSpec) -> ValueSlider:
        slider = ValueSlider(spec)
        slider.changed.connect(lambda _: self.changed.emit())
        self.sliders[spec.field] = slider
        return slider

    def set_task(self, task: str) -> None:
        """The mode's task changed: show guidance where the model guides that task (it keeps its value)."""
        self._task = task
        self._show_guidance()

    def _show_guidance(self) -> None:
        self.sampling_form.setRowVisible(self.sliders[GUIDANCE.name], self.capabilities.guides(self._task))

    def set_capabilities(self, capabilities: Capabilities) -> None:
        """Rebuild the method boxes for this bundle; hidden controls keep their values for later."""
        self._build_method_boxes(capabilities)
        self._capabilities = capabilities
        self._show_guidance()
        starts = dict(capabilities.decode_starts)
        for field in MODEL_STARTS:  # a writer hovering a slider its bundle starts learns why it sits there
            note = f" This model starts it at {number_text(starts[field.name])}." if field.name in starts else ""
            self.sliders[field.name].slider.setToolTip(field.help + note)
        self.set_values(self._stored)  # a control at the last model's start moves to this one's

    def _build_method_boxes(self, capabilities: Capabilities) -> None:
        self._stored.update(self.values())
        for stale in [s for s in self.sliders.values() if s.spec.group != "sampling"]:
            del self.sliders[stale.spec.field]
        self.bias = {}
        for box in (self.f2_box, self.posg_box):
            _clear(box)
        method = visible_method_controls(capabilities)
        forms = {"f2": QFormLayout(self.f2_box), "posg": QFormLayout(self.posg_box)}
        for spec in method:
            shown = self._slider(spec)
            forms[spec.group].addRow(spec.label, shown)
            if spec.zones:
                forms[spec.group].addRow("", shown.zone)
        if any(s.group == "f2" for s in method):
            top_k = capabilities.start_of(TOP_K)
            forms["f2"].addRow(QLabel(f"<i>“{TOP_K.label}” and “{TOP_P.label}” then pick the word within the chosen "
                                      f"class; {TOP_K.label.lower()} starts "
                                      f"{'off' if top_k == TOP_K.off else f'at {top_k}'} here.</i>", wordWrap=True))
        groups = pos_bias_groups(capabilities)
        if any(s.group == "posg" for s in method) or groups:
            forms["posg"].addRow(QLabel(f"<i>“{TOP_P.label}” then picks the word within the chosen kind.</i>",
                                        wordWrap=True))
        if groups:
            span = f"×{number_text(POS_BIAS_FACTORS.low)}–×{number_text(POS_BIAS_FACTORS.upper)}"
            forms["posg"].addRow(QLabel(f"<i>{POS_BIAS.label} ({span}):</i>", wordWrap=True))
        for group in groups:
            slider = FactorSlider(group, f"Make {group.replace('_', ' ')} more (right) or less (left) likely; "
                                         "the middle (×1) leaves them as the model wrote them.")
            slider.changed.connect(lambda _: self.changed.emit())
            self.bias[group] = slider
            forms["posg"].addRow(group.replace("_", " ").capitalize(), slider)
        self.f2_box.setVisible(any(s.group == "f2" for s in method))
        self.posg_box.setVisible(any(s.group == "posg" for s in method) or bool(groups))
        self.termination.setText(_termination_text(capabilities))
        self.termination.setToolTip(_termination_tip(capabilities))
        self.termination.setVisible(bool(self.termination.text()))

    @property
    def capabilities(self) -> Capabilities:
        """The loaded model's (a plain language model's before one loads): where Reset puts the controls."""
        return Capabilities() if self._capabilities is None else self._capabilities

    def values(self) -> dict[str, Any]:
        values = dict(self._stored)
        values.update({name: slider.value() for name, slider in self.sliders.items()})
        if self.bias:
            values[POS_BIAS_FIELD] = {g: s.value() for g, s in self.bias.items() if s.value() != 1.0}
        values.update({name: check.isChecked() for name, check in self.checks.items()})
        values.update({"n": self.n.value(), "seed_fixed": self.seed_fixed.isChecked(), SEED.name: self.seed.value()})
        values[STARTS_FOR] = self._starts_for
        values[BUNDLE_STARTS_FOR] = dict(self._bundle_starts_for)
        return values

    def set_values(self, values: dict[str, Any]) -> None:
        """Apply values (unknown keys are kept for controls that may appear with another bundle).

        Values saved beside another model (their STARTS_FOR head and BUNDLE_STARTS_FOR starts) that sit at that
        model's start of a control whose start depends on the model (top-k on F², a bundle's temperature) move
        to the loaded model's start; a value the writer chose stays. Before a model loads they keep the model
        they were saved with."""
        values = dict(values)
        starts_for, bundle_starts_for = values.pop(STARTS_FOR, None), values.pop(BUNDLE_STARTS_FOR, {})
        if starts_for is not None:  # values saved before bundles had starts name only the head: no bundle's
            self._starts_for = str(starts_for)
            self._bundle_starts_for = {str(name): float(start) for name, start in dict(bundle_starts_for).items()}
        for key in (STARTS_FOR, BUNDLE_STARTS_FOR):
            self._stored.pop(key, None)
        self._stored.update(values)
        for name, slider in self.sliders.items():
            if name in values:
                slider.set_value(float(values[name]))
        bias = values.get(POS_BIAS_FIELD, {}) if isinstance(values.get(POS_BIAS_FIELD), dict) else {}
        for group, factor in self.bias.items():
            factor.set_value(float(bias.get(group, 1.0)))
        self.n.setValue(int(values.get("n", self.n.value())))
        self.seed_fixed.setChecked(bool(values.get("seed_fixed", False)))
        self.seed.setValue(int(values.get(SEED.name, self.seed.value())))
        for name, check in self.checks.items():
            check.setChecked(bool(values.get(name, check.isChecked())))
        if self._capabilities is not None:
            self._follow_model_starts(self._capabilities)

    def _follow_model_starts(self, capabilities: Capabilities) -> None:
        """Each control at the start of the model its values were set beside moves to this model's start."""
        for field in MODEL_STARTS:
            slider = self.sliders[field.name]
            if slider.value() == slider.held(start_beside(field, self._starts_for, self._bundle_starts_for)):
                slider.set_value(float(capabilities.start_of(field)))
        self._starts_for, self._bundle_starts_for = capabilities.head.method, dict(capabilities.decode_starts)


def _termination_text(capabilities: Capabilities) -> str:
    termination = capabilities.head.termination
    if termination is None or termination.kind not in TERMINATION_WORDS:
        return ""
    return f"<b>Ending</b>: {TERMINATION_WORDS[termination.kind]}"


def _termination_tip(capabilities: Capabilities) -> str:
    termination = capabilities.head.termination
    if termination is None or termination.kind not in TERMINATION_NAMES:
        return ""
    return f"The model has a {TERMINATION_NAMES[termination.kind]}, ε = {termination.eps}."


def _clear(box: QGroupBox) -> None:
    layout = box.layout()
    if layout is None:
        return
    while layout.count():
        item = layout.takeAt(0)
        widget = item.widget() if item is not None else None
        if widget:
            widget.deleteLater()
    QWidget().setLayout(layout)  # reparent the old layout so a new one can be installed
