"""`.ci/setup-venv` checks the lock before installing anything: a lock it cannot install from safely (no torch
pin, empty, CRLF line endings, two torch pins) stops it with one clear line and no pip call.

Run on a copy of the setup files with a stand-in `.venv/bin/python` that records each `python -m pip` call
instead of installing (as tests/tooling/test_dependency_lock.py does).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LOCK = "requirements/lock.txt"

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the stand-in interpreter is a shell script")


def run_setup(root: Path) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k not in ("VARIORUM_TORCH_VERSION",)}
    return subprocess.run([str(root / ".ci" / "setup-venv"), "dev"], capture_output=True, text=True, timeout=120,
                          check=False, env={**environ, "CI": "true"})


def real_lock() -> str:
    return (ROOT / LOCK).read_text()


def without_torch(text: str) -> str:
    return "".join(line for line in text.splitlines(keepends=True) if not line.startswith("torch=="))


@pytest.mark.parametrize(("lock", "says"), [
    (lambda: without_torch(real_lock()), "pins no torch (a line torch==X.Y.Z)"),
    (lambda: "", "is empty (no pinned package)"),
    (lambda: "# only comments\n\n", "is empty (no pinned package)"),
    (lambda: real_lock().replace("\n", "\r\n"), "has Windows (CRLF) line endings"),
    (lambda: real_lock() + "torch==2.12.0\n", "pins torch 2 times"),
    (lambda: without_torch(real_lock()) + "torch>=2.4\n", 'has "torch>=2.4", not an exact torch pin'),
])
def test_a_bad_lock_is_one_line_before_any_install(setup_copy: Path, lock: Callable[[], str],
                                                   says: str) -> None:
    (setup_copy / LOCK).write_text(lock(), newline="")
    result = run_setup(setup_copy)
    assert result.returncode == 1
    assert not (setup_copy / "pip-calls").exists()  # nothing was installed
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"setup-venv: error: {LOCK} {says}"), result.stderr


def test_a_missing_lock_is_named(setup_copy: Path) -> None:
    (setup_copy / LOCK).unlink()
    result = run_setup(setup_copy)
    assert result.returncode == 1 and not (setup_copy / "pip-calls").exists()
    assert result.stderr.strip() == (f"setup-venv: error: {LOCK} is missing or not a regular file; refresh it "
                                     "with .ci/lock (docs/dependencies.md)")


def test_the_committed_lock_passes() -> None:
    result = subprocess.run([str(ROOT / ".ci" / "check-lock"), str(ROOT / LOCK)], capture_output=True, text=True,
                            timeout=30, check=False)
    assert result.returncode == 0 and result.stderr == "", result.stderr
