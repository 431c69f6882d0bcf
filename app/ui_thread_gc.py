"""Python's cyclic garbage collection runs on the UI thread only.

Python collects reference cycles in whichever thread happens to allocate when generation 0 passes its threshold.
The app runs Python work in threads (loading a model, decoding, tagging, loading a parser), and those allocate a
lot, so a collection would often start in one of them. A Qt object held in a cycle (a widget whose connected lambda
refers back to it, a closed dialog) would then be destroyed off the UI thread while the UI thread walks the widget
tree (restyling, painting), which crashes the process. So automatic collection is switched off and a timer on the
UI thread collects the generations whose counts passed their thresholds, as Python itself would. (Python also
delays full collections until enough long-lived objects pile up; this collector does not, which only means a full
collection happens a little more often.)
"""

from __future__ import annotations

import gc

from PySide6.QtCore import QCoreApplication, QObject, QTimer

COLLECT_EVERY_MS = 100  # cycles made between ticks wait at most this long; a generation-0 pass takes well under 1 ms


class UiThreadCollector(QObject):
    """Owns cyclic garbage collection while it is installed on the application (see the module docstring)."""

    def __init__(self, app: QCoreApplication) -> None:
        super().__init__(app)
        gc.disable()
        self._timer = QTimer(self)
        self._timer.timeout.connect(self.collect_due)
        self._timer.start(COLLECT_EVERY_MS)

    @classmethod
    def install(cls, app: QCoreApplication) -> UiThreadCollector:
        """The collector of `app`, made on first call (every window calls this; one collector serves them all)."""
        found = app.findChild(cls)
        return found if isinstance(found, cls) else cls(app)

    @classmethod
    def uninstall(cls, app: QCoreApplication) -> None:
        """Hand collection back to Python (for a process that goes on without the UI, such as a test run)."""
        for collector in app.findChildren(cls):
            collector._timer.stop()
            collector.setParent(None)
            collector.deleteLater()
        gc.enable()

    @staticmethod
    def collect_due() -> int:
        """Collect the oldest generation whose count passed its threshold, once generation 0's has; the number of
        unreachable objects found."""
        counts, thresholds = gc.get_count(), gc.get_threshold()
        if counts[0] <= thresholds[0]:
            return 0
        oldest = max(generation for generation in range(3) if counts[generation] > thresholds[generation])
        return gc.collect(oldest)
