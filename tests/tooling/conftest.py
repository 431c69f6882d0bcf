"""Shared by the tooling tests: a copy of the repository's setup files to run `.ci/setup-venv` on."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LOCK_PATH = "requirements/lock.txt"


@pytest.fixture()
def setup_copy(tmp_path: Path) -> Path:
    """The setup files copied to `tmp_path`, with a stand-in .venv/bin/python that records each pip call."""
    for name in [".ci/setup-venv", ".ci/check-lock", ".ci/choose-torch", "pyproject.toml", LOCK_PATH]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, tmp_path / name)
    python = tmp_path / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/bin/sh\nif [ "$1" = -m ] && [ "$2" = pip ]; then echo "$*" >> "{tmp_path}/pip-calls"; '
                      f'exit 0; fi\nexec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    return tmp_path
