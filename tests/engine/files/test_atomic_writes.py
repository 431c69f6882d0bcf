"""Atomic writes: a failed or killed save keeps a complete file or folder, leaves no temp behind, and
gives every file of a folder the same permissions."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from engine.files.atomic_writes import (
    atomic_directory,
    atomic_file,
    recover_directory,
    write_bytes_atomic,
    write_text_atomic,
)
from engine.training.checkpoint import save_checkpoint


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
from engine.files.atomic_writes import atomic_directory
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


def test_bundle_and_checkpoint_files_get_one_set_of_permissions(tmp_path: Path, tiny_model: torch.nn.Module) -> None:
    old_umask = os.umask(0o022)
    try:
        save_checkpoint(tmp_path / "checkpoint", tiny_model, torch.optim.AdamW(tiny_model.parameters()), 1, {})
        with atomic_directory(tmp_path / "bundle") as staging:
            os.close(os.open(staging / "private.bin", os.O_CREAT | os.O_WRONLY, 0o600))
            (staging / "heads").mkdir(mode=0o700)
    finally:
        os.umask(old_umask)
    modes = {p.relative_to(tmp_path).as_posix(): stat.S_IMODE(p.stat().st_mode) for p in tmp_path.rglob("*")}
    assert modes == {"checkpoint": 0o755, "checkpoint/model.safetensors": 0o644, "checkpoint/optimizer.pt": 0o644,
                     "checkpoint/state.json": 0o644, "bundle": 0o755, "bundle/private.bin": 0o644,
                     "bundle/heads": 0o755}


def test_a_file_write_that_fails_keeps_the_old_file_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "metrics.jsonl"
    write_text_atomic(target, "old\n", mode=0o600)
    with pytest.raises(ValueError, match="half way"), atomic_file(target) as temp:
        temp.write_text("new, half written")
        raise ValueError("half way")
    assert target.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["metrics.jsonl"]
    write_bytes_atomic(target, b"new\n")
    assert target.read_bytes() == b"new\n" and stat.S_IMODE(target.stat().st_mode) == 0o600  # its mode is kept
