"""Work around a PySide6 6.12 reference-count bug that crashes long sessions on CPython < 3.12.

Observed with PySide6-Essentials 6.12.0 on CPython 3.11 (reproduce: `python -m app.refcount_guard`):
every Python call of a Qt method that returns void (e.g. `QLabel.setText`, `QTimer.start`,
`QCoreApplication.processEvents`) drops one reference to `None`, and every `Signal.emit()` drops one
to `True`, without having taken them. CPython 3.12+ makes these singletons immortal, so nothing
happens there; on 3.11 the count reaches zero after enough UI work and the interpreter aborts with
"Fatal Python error: none_dealloc / bool_dealloc".

`install()` detects the bug with a probe and, only when it is present, gives None, True and False a
reference count of 2**40 — what CPython 3.12 does for immortal objects — so the missing increfs can
never bring them to zero. These singletons are never freed anyway, so the extra count changes nothing
else. Remove this module once PySide6 is pinned to a fixed release.
"""

from __future__ import annotations

import ctypes
import sys

IMMORTAL = 1 << 40
PROBE_CALLS = 20


def _probe_leaks() -> bool:
    """True when void Qt calls or Python-side emits lose references (needs a Q(Core)Application)."""
    from PySide6.QtCore import QObject, QTimer, Signal

    class _Probe(QObject):
        fired = Signal()

    timer, probe = QTimer(), _Probe()
    none_before, true_before = sys.getrefcount(None), sys.getrefcount(True)
    for _ in range(PROBE_CALLS):
        timer.setInterval(5)
        probe.fired.emit()
    return (sys.getrefcount(None) < none_before - PROBE_CALLS // 2
            or sys.getrefcount(True) < true_before - PROBE_CALLS // 2)


def install() -> bool:
    """Apply the workaround when needed; returns whether it was applied."""
    if sys.version_info >= (3, 12) or sys.implementation.name != "cpython" or not _probe_leaks():
        return False
    for singleton in (None, True, False):
        # ob_refcnt is the first Py_ssize_t of every object in a CPython (non-debug) build
        ctypes.c_ssize_t.from_address(id(singleton)).value += IMMORTAL
    return True


if __name__ == "__main__":
    from PySide6.QtCore import QCoreApplication

    app = QCoreApplication([])
    print("PySide6 refcount bug present:", _probe_leaks())
    print("workaround applied:", install())
