"""Save settings soon after every change (debounced, atomic), so a crash loses none of them (Qt side)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, QTimer

from app.persistence.settings import AppSettings, save_settings

DEBOUNCE_MS = 500


class SettingsSaver(QObject):
    """`schedule()` on every change; `flush()` writes now. `current()` returns the settings to write.

    A failed write is reported once through `on_error` until a write succeeds again.
    """

    def __init__(self, path: Path, current: Callable[[], AppSettings], on_error: Callable[[str], None],
                 parent: QObject | None = None, debounce_ms: int = DEBOUNCE_MS) -> None:
        super().__init__(parent)
        self.path = path
        self._current = current
        self._on_error = on_error
        self._failing = False
        self._timer = QTimer(self, singleShot=True, interval=debounce_ms)
        self._timer.timeout.connect(self.flush)

    def schedule(self) -> None:
        self._timer.start()  # restart = debounce

    def flush(self) -> bool:
        self._timer.stop()
        try:
            save_settings(self.path, self._current())
        except OSError as error:
            if not self._failing:
                self._on_error(f"Your settings could not be saved to {self.path} ({error.strerror or error}).")
            self._failing = True
            return False
        self._failing = False
        return True
