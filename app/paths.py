"""Where the app keeps its files: user data dir (autosaves, models) and user config dir (settings, presets).

`VARIORUM_HOME` (or `--home`) puts both under one folder, so tests and portable installs never touch
the real user directories.

File dialogs start in the writer's folders, never in the app's working folder (the source tree when
run from it): the folder last used, else the writer's documents folder (`dialog_folder`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import platformdirs

APP_NAME = "variorum"


@dataclass(frozen=True)
class AppPaths:
    """The app's data and config folders (created on demand)."""

    data_dir: Path
    config_dir: Path

    @property
    def autosave_dir(self) -> Path:
        return self.data_dir / "autosave"

    @property
    def settings_file(self) -> Path:
        return self.config_dir / "settings.json"

    @property
    def presets_file(self) -> Path:
        return self.config_dir / "presets.json"

    @classmethod
    def default(cls, home: str | Path | None = None) -> AppPaths:
        """Platform user dirs, or `home`/data and `home`/config when a home is given (or set in the env)."""
        home = home or os.environ.get("VARIORUM_HOME")
        if home:
            return cls(Path(home) / "data", Path(home) / "config")
        return cls(
            Path(platformdirs.user_data_dir(APP_NAME, appauthor=False)),
            Path(platformdirs.user_config_dir(APP_NAME, appauthor=False)),
        )


def documents_dir() -> Path:
    """The writer's documents folder (XDG's, ~/Documents, or the platform's), or their home folder when that
    folder does not exist."""
    documents = Path(platformdirs.user_documents_dir())
    return documents if documents.is_dir() else Path.home()


def dialog_folder(used: Iterable[str | Path]) -> Path:
    """Where a file dialog starts: the first of the folders last `used` (most recent first) that still
    exists, else the writer's documents folder."""
    for folder in used:
        if folder and Path(folder).is_dir():
            return Path(folder)
    return documents_dir()
