"""A `variorum train` killed (SIGKILL) at a file operation leaves a folder the next run can use: the
next `--resume` finishes with a bundle whose token counts are real and a log of every step once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from engine.bundles.bundle import load_bundle
from engine.lm.train import main as train_main
from engine.training.metrics_log import trim_metrics_log
from tests.conftest import STORIES

ROOT = Path(__file__).resolve().parents[3]
STEPS = 2


def train_args(out: Path) -> list[str]:
    return ["--train-files", str(STORIES), "--out-dir", str(out), "--vocab-size", "300", "--n-layer", "1",
            "--n-embd", "16", "--n-head", "2", "--block-size", "16", "--max-steps", str(STEPS), "--batch-size", "2",
            "--warmup-steps", "1", "--save-every", "1", "--no-progress", "--no-compile"]


def killed_run(out: Path, when: str, *extra: str) -> int:
    """Run the trainer in a child killed at the file operation `when` (tests/engine/kill_driver.py)."""
    child = subprocess.run([sys.executable, "-m", "tests.engine.kill_driver", when, *train_args(out), *extra],
                           cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, check=False)
    return child.returncode


def assert_usable(out: Path) -> None:
    """The next run goes on from whatever the kill left and ends with a sound bundle and log."""
    assert train_main([*train_args(out), "--resume", "--allow-fresh-start"]) == 0
    bundle = load_bundle(out / "bundle")
    assert bundle.tokenizer.counts.sum() > 0  # F²/AGG would read all-zero counts as "no data"
    steps = [json.loads(line)["step"] for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert steps == list(range(1, STEPS + 1))


@pytest.mark.parametrize("when", [
    "open:1",  # the tokenizer's vocabulary written (by its Rust writer), its counts not yet
    "opened:1",  # the counts file created, still empty
])
def test_a_fresh_run_killed_at_a_file_operation(tmp_path: Path, when: str) -> None:
    out = tmp_path / "run"
    assert killed_run(out, when) == -signal.SIGKILL
    assert_usable(out)


def test_a_resume_killed_while_rewriting_the_log_keeps_it(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert train_main([*train_args(out), "--chunk-steps", "1"]) == 0
    assert killed_run(out, "opened:1", "--resume") == -signal.SIGKILL  # the first file it writes: the log
    assert [json.loads(line)["step"] for line in (out / "metrics.jsonl").read_text().splitlines()] == [1]
    assert_usable(out)


def test_a_log_record_cut_short_by_a_kill_is_dropped(tmp_path: Path) -> None:
    log = tmp_path / "metrics.jsonl"
    log.write_text('{"step": 1, "train_loss": 5.0}\n{"step": 2, "train_loss": 4.9}\n{"step": 3, "tra')
    trim_metrics_log(log, 2)
    assert log.read_text() == '{"step": 1, "train_loss": 5.0}\n{"step": 2, "train_loss": 4.9}\n'
