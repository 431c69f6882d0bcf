"""Atomic directory writes: a failed or killed save keeps a complete folder and leaves no staging behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from engine.atomic import atomic_directory, recover_directory


def test_success_replaces_and_failure_keeps_the_previous_directory(tmp_path: Path) -> None:
    target = tmp_path / "models" / "bundle"
    with atomic_directory(target) as staging:
        (staging / "a.txt").write_text("first")
    assert (target / "a.txt").read_text() == "first"
    with pytest.raises(OSError, match="disk full"), atomic_directory(target) as staging:
        (staging / "a.txt").write_text("second, half written")
        raise OSError("disk full")
    assert (target / "a.txt").read_text() == "first"
    assert sorted(p.name for p in target.parent.iterdir()) == ["bundle"]  # no staging folder left
    with atomic_directory(target) as staging:
        (staging / "b.txt").write_text("second")
    assert sorted(p.name for p in target.iterdir()) == ["b.txt"]


# A child process saves "new" over "old" and SIGKILLs itself at the k-th filesystem step of the save
# (mkdtemp, rename aside, rename in, delete), as `kill -9` would at that moment.
_CRASHING_SAVE = """
import os, shutil, signal, sys, tempfile
from pathlib import Path
from engine.atomic import atomic_directory
target, crash_at, calls = Path(sys.argv[1]), int(sys.argv[2]), [0]
def step(real):
    def wrapped(*args, **kwargs):
        calls[0] += 1
        if calls[0] == crash_at:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(*args, **kwargs)
    return wrapped
tempfile.mkdtemp = step(tempfile.mkdtemp)
Path.replace, Path.rename, shutil.rmtree = step(Path.replace), step(Path.rename), step(shutil.rmtree)
with atomic_directory(target) as staging:
    (staging / "state.json").write_text("new")
"""


def test_a_save_killed_at_any_step_leaves_a_complete_folder(tmp_path: Path) -> None:
    outcomes = set()
    for crash_at in range(1, 8):  # past the last step the save simply completes
        target = tmp_path / str(crash_at) / "checkpoint"
        with atomic_directory(target) as staging:
            (staging / "state.json").write_text("old")
        child = subprocess.run([sys.executable, "-c", _CRASHING_SAVE, str(target), str(crash_at)],
                               env={**os.environ, "PYTHONPATH": str(Path.cwd())}, check=False)
        recover_directory(target)
        outcomes.add((child.returncode == -signal.SIGKILL, (target / "state.json").read_text()))
        assert sorted(p.name for p in target.parent.iterdir()) == ["checkpoint"]  # leftovers cleaned
    # killed early: the old folder survives; killed after the swap, or not killed: the new one
    assert outcomes == {(True, "old"), (True, "new"), (False, "new")}


def test_recover_restores_a_folder_set_aside_by_a_killed_swap(tmp_path: Path) -> None:
    target = tmp_path / "checkpoint"
    aside = tmp_path / ".checkpoint-previous-abc"
    aside.mkdir()
    (aside / "state.json").write_text("old")
    (tmp_path / ".checkpoint-staging-xyz").mkdir()  # half-written new copy
    (tmp_path / ".checkpoint-q1w2e3").mkdir()  # staging name of earlier Variorum versions
    recover_directory(target)
    assert (target / "state.json").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint"]
