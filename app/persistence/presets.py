"""Named presets of control values (save, load, delete), stored as one JSON object in the config dir.

An unreadable presets file is moved to a numbered backup before anything new is saved over it, and a
preset's unusable values (NaN, wrong type, out of range) are dropped when it is loaded.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from app.controls.values import clean_control_values
from app.persistence.settings import keep_backup
from engine.files.atomic_writes import write_text_atomic


class PresetError(ValueError):
    """A preset name or file problem, worded for the writer."""


class PresetStore:
    """Presets by name → control values (a JSON-serializable dict)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.notice = ""  # set when the file was unreadable and presets start empty
        self._presets: dict[str, dict[str, Any]] = self._read()

    def _read(self) -> dict[str, dict[str, Any]]:
        if not self.path.exists():
            return {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
                raise ValueError("expected an object of name → settings")
        except (OSError, ValueError, RecursionError) as error:
            kept = keep_backup(self.path)
            self.notice = f"Presets file {self.path.name} could not be read ({error}); starting with none.{kept}"
            return {}
        return data

    def names(self) -> list[str]:
        return sorted(self._presets)

    def save(self, name: str, values: dict[str, Any]) -> None:
        name = name.strip()
        if not name:
            raise PresetError("a preset needs a name")
        self._presets[name] = json.loads(json.dumps(values))  # a deep, JSON-clean copy
        self._write()

    def load(self, name: str) -> dict[str, Any]:
        if name not in self._presets:
            raise PresetError(f"there is no preset called {name!r}")
        copy: dict[str, Any] = json.loads(json.dumps(self._presets[name]))  # a deep copy of a saved dict
        return clean_control_values(copy)[0]

    def delete(self, name: str) -> None:
        if self._presets.pop(name, None) is not None:
            self._write()

    def _write(self) -> None:
        try:
            write_text_atomic(self.path, json.dumps(self._presets, indent=2, sort_keys=True))
        except OSError as error:
            raise PresetError(f"presets could not be saved to {self.path} ({error.strerror or error})") from None
