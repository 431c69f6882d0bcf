"""`.ci/run-pytest` ends with pytest's count line and fails when nothing ran; `.ci/choose-torch` picks the
CPU or CUDA torch build deliberately and says which."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SMALL_TEST_FILE = "tests/engine/files/test_atomic_writes.py"


def locked_torch() -> str:
    """choose-torch's version: the lock's torch pin (docs/dependencies.md)."""
    pin = re.search(r"^torch==(\S+)", (ROOT / "requirements" / "lock.txt").read_text(), re.MULTILINE)
    assert pin, "requirements/lock.txt pins no torch"
    return pin[1]


def run_script(name: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    merged = {**os.environ, "PYTHON": sys.executable, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run([str(ROOT / ".ci" / name), *args], capture_output=True, text=True, env=merged,
                          timeout=300, check=False)


def test_run_pytest_prints_the_passed_count() -> None:
    result = run_script("run-pytest", SMALL_TEST_FILE)
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"^\d+ passed in ", result.stdout, re.MULTILINE), result.stdout


def test_run_pytest_fails_clearly_when_no_test_ran() -> None:
    result = run_script("run-pytest", SMALL_TEST_FILE, "-k", "no_test_has_this_name")
    assert result.returncode == 1
    assert "no tests were collected" in result.stderr


def test_ci_run_uses_run_pytest() -> None:
    assert '.ci/run-pytest "$@"' in (ROOT / ".ci" / "run").read_text()


@pytest.fixture()
def fake_nvidia_smi(tmp_path: Path) -> Path:
    """A bin folder whose nvidia-smi prints what the file `gpus` holds; the test sets that file."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "nvidia-smi"
    script.write_text(f'#!/bin/sh\n[ -s "{tmp_path}/gpus" ] || exit 6\ncat "{tmp_path}/gpus"\n')
    script.chmod(0o755)
    return bin_dir


def choose_torch(bin_dir: Path, **env: str) -> tuple[list[str], str]:
    result = run_script("choose-torch", sys.executable, env={"PATH": f"{bin_dir}:{os.environ['PATH']}", **env})
    assert result.returncode == 0, result.stderr
    return result.stdout.split(), result.stderr


@pytest.mark.skipif(sys.platform != "linux", reason="the CPU/CUDA choice is made on Linux only")
def test_choose_torch_takes_cuda_only_with_a_gpu(fake_nvidia_smi: Path) -> None:
    (fake_nvidia_smi.parent / "gpus").write_text("GPU 0: NVIDIA H100 (UUID: GPU-1)\n")
    args, said = choose_torch(fake_nvidia_smi)
    assert args == [f"torch==={locked_torch()}"]  # exact: a local +cpu wheel of that version cannot win
    assert "CUDA build" in said and "H100" in said


@pytest.mark.skipif(sys.platform != "linux", reason="the CPU/CUDA choice is made on Linux only")
def test_choose_torch_takes_the_cpu_index_without_gpu_or_local_wheel(fake_nvidia_smi: Path, tmp_path: Path) -> None:
    args, said = choose_torch(fake_nvidia_smi, PIP_FIND_LINKS=str(tmp_path), PIP_NO_INDEX="1")
    assert args == [f"torch=={locked_torch()}+cpu", "--extra-index-url", "https://download.pytorch.org/whl/cpu"]
    assert "CPU build" in said


def test_choose_torch_keeps_the_index_override(fake_nvidia_smi: Path) -> None:
    (fake_nvidia_smi.parent / "gpus").write_text("GPU 0: NVIDIA H100 (UUID: GPU-1)\n")
    args, said = choose_torch(fake_nvidia_smi, VARIORUM_TORCH_INDEX="https://example.invalid/whl")
    assert args == [f"torch=={locked_torch()}", "--index-url", "https://example.invalid/whl"]
    assert "VARIORUM_TORCH_INDEX" in said
