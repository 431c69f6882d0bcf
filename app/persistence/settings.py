"""App settings persisted as JSON in the user config dir; a corrupt file falls back to defaults with a notice.

An unreadable file is kept as a numbered backup (`settings.corrupt.json`, `settings.corrupt-2.json`, …) so
a second corrupt file never overwrites the first; a bad control value is dropped and named, not fatal.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.controls.values import clean_control_values
from engine.files.atomic_writes import write_text_atomic
from engine.onnx import RUNTIMES

THEMES = ("light", "dark")
MAX_RECENT = 10
FONT_SIZES = range(8, 33)


@dataclass
class AppSettings:
    """Everything the app remembers between runs."""

    theme: str = "light"
    font_size: int = 12
    recent_files: list[str] = field(default_factory=list)
    last_bundle: str = ""
    model_folders: list[str] = field(default_factory=list)  # bundle folders added from outside the models folders
    device: str = "auto"
    runtime: str = "auto"  # what runs the decoder step: auto / torch / onnx (engine/onnx)
    controls: dict[str, Any] = field(default_factory=dict)  # last-used control values
    window_size: list[int] = field(default_factory=list)  # [width, height] of the window; [] = the default size
    window_position: list[int] = field(default_factory=list)  # [x, y] of the window's frame; [] = where Qt puts it
    maximized: bool = False
    splitter_sizes: list[int] = field(default_factory=list)  # editor | variants | controls widths; [] = default

    def add_recent(self, path: str) -> None:
        self.recent_files = [path, *[p for p in self.recent_files if p != path]][:MAX_RECENT]

    def validate(self) -> None:
        """Raise ValueError naming the first field with a wrong value."""
        if self.theme not in THEMES:
            raise ValueError(f"theme must be one of {THEMES}, got {self.theme!r}")
        if not isinstance(self.font_size, int) or self.font_size not in FONT_SIZES:
            raise ValueError(f"font_size must be an integer in 8..32, got {self.font_size!r}")
        if not isinstance(self.recent_files, list) or not all(isinstance(p, str) for p in self.recent_files):
            raise ValueError("recent_files must be a list of paths")
        if not isinstance(self.last_bundle, str) or self.device not in ("auto", "cpu", "cuda"):
            raise ValueError(f"last_bundle must be a path and device auto/cpu/cuda, got {self.device!r}")
        if not isinstance(self.model_folders, list) or not all(isinstance(p, str) for p in self.model_folders):
            raise ValueError("model_folders must be a list of paths")
        if self.runtime not in RUNTIMES:
            raise ValueError(f"runtime must be one of {list(RUNTIMES)}, got {self.runtime!r}")
        if not isinstance(self.controls, dict):
            raise ValueError("controls must be an object")
        for name in ("window_size", "splitter_sizes"):
            sizes = getattr(self, name)
            if not isinstance(sizes, list) or not all(isinstance(w, int) and not isinstance(w, bool) and w >= 0
                                                      for w in sizes):
                raise ValueError(f"{name} must be a list of sizes in pixels")
        if not isinstance(self.window_position, list) or len(self.window_position) not in (0, 2) or not all(
                isinstance(c, int) and not isinstance(c, bool) for c in self.window_position):
            raise ValueError("window_position must be [x, y] in pixels")
        if not isinstance(self.maximized, bool):
            raise ValueError("maximized must be true or false")


def load_settings(path: Path) -> tuple[AppSettings, str]:
    """Read settings; on any problem return defaults and a notice for the writer (else "")."""
    if not path.exists():
        return AppSettings(), ""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ValueError("the file does not hold a JSON object")
        known = {f.name for f in dataclasses.fields(AppSettings)}
        settings = AppSettings(**{k: v for k, v in data.items() if k in known})
        settings.validate()
    except (OSError, ValueError, TypeError, RecursionError) as error:
        kept = keep_backup(path)
        return AppSettings(), f"Your settings could not be read ({error}); defaults are used instead.{kept}"
    settings.controls, dropped = clean_control_values(settings.controls)
    if dropped:
        return settings, f"Ignored unusable saved control value(s): {', '.join(dropped)}."
    return settings, ""


def keep_backup(path: Path) -> str:
    """Move an unreadable file to the first free `<name>.corrupt[-N].json`; say where (or "")."""
    for number in range(1, 1000):
        backup = path.with_suffix(".corrupt.json" if number == 1 else f".corrupt-{number}.json")
        if backup.exists():
            continue
        try:
            path.replace(backup)
        except OSError:
            return ""
        return f" The unreadable file was kept as {backup.name}."
    return ""


def save_settings(path: Path, settings: AppSettings) -> None:
    write_text_atomic(path, json.dumps(dataclasses.asdict(settings), indent=2))
