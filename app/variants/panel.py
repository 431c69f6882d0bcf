"""The variants panel: a grid of panes filled concurrently as tokens stream, plus the diversity readout
and the colour toggle. Pinned panes stay (first) when a new batch is generated."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import (
    QComboBox,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QListView,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from app.variants.colouring import COLOUR_MODE_TIPS, COLOUR_MODES, legend_html
from app.variants.diversity import DIVERSITY_HELP, near_identical, readout
from app.variants.pane import VariantPane
from app.variants.state import VariantState

# A column narrower than this is dropped; two fit at the default window size. Panes wrap their header and
# buttons to fit.
PANE_MIN_WIDTH = 230
MAX_COLUMNS = 4


class VariantsPanel(QWidget):
    """Owns the panes; the main window connects its signals to the editor and the generator."""

    insert_requested = Signal(str)
    replace_requested = Signal(str)
    regenerate_requested = Signal(object)  # pane
    colour_mode_changed = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.panes: list[VariantPane] = []
        self._spare: list[VariantPane] = []  # hidden panes kept for reuse
        self.diversity = QLabel(readout([]), wordWrap=True)  # wraps rather than slide under the colour picker
        self.diversity.setToolTip(DIVERSITY_HELP)
        self.colour_mode = QComboBox()
        self.colour_mode.setAccessibleName("Colour tokens by")
        self.colour_mode.setToolTip("Colour each word by how common it is or by its part of speech; "
                                    "hover a word to see its class and how likely the model found it.")
        for key, label in COLOUR_MODES.items():
            self.colour_mode.addItem(label, key)
            self.colour_mode.setItemData(self.colour_mode.count() - 1, COLOUR_MODE_TIPS[key],
                                         Qt.ItemDataRole.ToolTipRole)
        self.legend = QLabel()  # which colour is which kind of word
        self.legend.setAccessibleName("Colour legend")
        self.legend.setWordWrap(True)
        self.legend.hide()
        self.colour_mode.currentIndexChanged.connect(lambda _: self.colour_mode_changed.emit(self.mode()))
        top = QHBoxLayout()
        top.addWidget(self.diversity, 1)
        top.addWidget(QLabel("Colour:"))
        top.addWidget(self.colour_mode)
        self.grid = QGridLayout()
        holder = QWidget()
        holder.setLayout(self.grid)
        self.scroll_area = QScrollArea(widgetResizable=True)
        self.scroll_area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.scroll_area.setWidget(holder)
        self.columns = 1
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.legend)
        layout.addWidget(self.scroll_area, 1)
        self.empty_hint = QLabel("Variants appear here. Press Ctrl+Enter to generate.")
        self.grid.addWidget(self.empty_hint, 0, 0)

    def mode(self) -> str:
        return str(self.colour_mode.currentData())

    def set_group_mode_available(self, available: bool) -> None:
        """'Model group' only makes sense for heads with more than one group."""
        self._offer_mode("group", available)

    def set_pos_mode_available(self, available: bool) -> None:
        """'Part of speech' needs a POS-guided model or a tagger this build can run."""
        self._offer_mode("pos", available)

    def _offer_mode(self, mode: str, available: bool) -> None:
        index = self.colour_mode.findData(mode)
        view = self.colour_mode.view()
        assert isinstance(view, QListView)  # QComboBox's default view; the one with per-row hiding
        view.setRowHidden(index, not available)
        if not available and self.mode() == mode:
            self.colour_mode.setCurrentIndex(0)

    def offered_modes(self) -> list[str]:
        """The colour modes the picker lists now."""
        view = self.colour_mode.view()
        assert isinstance(view, QListView)
        return [str(self.colour_mode.itemData(i)) for i in range(self.colour_mode.count()) if not view.isRowHidden(i)]

    def update_legend(self) -> None:
        """Show which colour is which kind of word in the panes ('' hides the legend)."""
        html = legend_html([label for pane in self.panes for label in pane.labels])
        self.legend.setText(html)
        self.legend.setVisible(bool(html))

    def prepare(self, n: int) -> list[int]:
        """Keep pinned panes, add `n` fresh panes after them; return the fresh panes' indices."""
        kept = [p for p in self.panes if p.state.pinned]
        self._spare.extend(p for p in self.panes if not p.state.pinned)
        self.panes = kept
        for _ in range(n):  # reuse hidden panes: building widgets is the slow part of starting a batch
            pane = self._spare.pop() if self._spare else self._new_pane()
            pane.reset(VariantState())
            self.panes.append(pane)
        for pane in self._spare:
            pane.hide()
        self._relayout()
        return list(range(len(self.panes) - n, len(self.panes)))

    def show_states(self, states: list[VariantState]) -> None:
        """Show a stored batch (history): replaces unpinned panes."""
        indices = self.prepare(len(states))
        for index, state in zip(indices, states, strict=True):
            self.panes[index].reset(state)
        self.update_diversity()

    def _new_pane(self) -> VariantPane:
        pane = VariantPane(len(self.panes) + 1)
        pane.insert_requested.connect(self.insert_requested)
        pane.replace_requested.connect(self.replace_requested)
        pane.regenerate_requested.connect(self.regenerate_requested)
        pane.pin_toggled.connect(lambda _: self.update_diversity())
        return pane

    def fitting_columns(self) -> int:
        """Side-by-side columns for the panel's width: 1–4, never more than there are panes."""
        return max(1, min(MAX_COLUMNS, self.pane_room() // PANE_MIN_WIDTH, len(self.panes) or 1))

    def pane_room(self) -> int:
        """The width the panes share, the vertical scroll bar's room always set aside: whether the last batch
        needed scrolling must not change how the next one is laid out at the same window size."""
        area = self.scroll_area
        bar = area.verticalScrollBar().sizeHint().width()
        return max(0, area.width() - 2 * area.frameWidth() - bar)

    def _relayout(self) -> None:
        self.empty_hint.setVisible(not self.panes)
        self.columns = self.fitting_columns()
        for pane in (*self.panes, *self._spare):
            self.grid.removeWidget(pane)
        for column in range(MAX_COLUMNS):  # equal widths for the used columns
            self.grid.setColumnStretch(column, 1 if column < self.columns else 0)
        for i, pane in enumerate(self.panes):
            pane.set_number(i + 1)
            self.grid.addWidget(pane, 1 + i // self.columns, i % self.columns)
            pane.show()

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        if self.fitting_columns() != self.columns:
            self._relayout()

    def set_busy(self, busy: bool, indices: list[int] | None = None) -> None:
        for i, pane in enumerate(self.panes):
            pane.set_busy(busy and (indices is None or i in indices))

    def texts(self) -> list[str]:
        return [p.state.text for p in self.panes]

    def update_diversity(self) -> None:
        """The readout, and each pane's flag for variants nearly the same as it."""
        texts = self.texts()
        self.diversity.setText(readout(texts))
        for pane, twins in zip(self.panes, near_identical(texts), strict=True):
            pane.near_identical = [i + 1 for i in twins]
            pane.refresh_header()

    def each(self, fn: Callable[[VariantPane], None]) -> None:
        for pane in self.panes:
            fn(pane)
