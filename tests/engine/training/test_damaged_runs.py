"""`--resume` on a damaged or edited run folder: each damage is one error line, exit 2, and nothing in the folder
changes; a checkpoint step beyond max_steps or beyond the logged steps is refused, not trained into a card."""

from __future__ import annotations

import json
import os
import shutil
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from engine.cli import main as cli_main
from tests.conftest import STORIES

TINY = ["--train-files", str(STORIES), "--vocab-size", "300", "--n-layer", "1", "--n-embd", "16", "--n-head", "2",
        "--block-size", "16", "--batch-size", "2", "--warmup-steps", "1", "--no-progress", "--max-steps", "4"]


@pytest.fixture(scope="module")
def half_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run stopped after 2 of its 4 steps, with its checkpoint and log."""
    out = tmp_path_factory.mktemp("runs") / "half"
    assert cli_main(["train", *TINY, "--out-dir", str(out), "--chunk-steps", "2"]) == 0
    return out


@pytest.fixture
def run(half_run: Path, tmp_path: Path) -> Path:
    out = tmp_path / "run"
    shutil.copytree(half_run, out)
    return out


@pytest.fixture
def no_hang() -> Iterator[None]:
    """Fail instead of hanging the suite when a FIFO is opened and waited on."""
    def expire(signum: int, frame: object) -> None:
        raise TimeoutError("the resume hung")
    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def snapshot(folder: Path) -> dict[str, object]:
    """Every entry of a folder: a file's bytes, a link's target, or the kind of a special file."""
    seen: dict[str, object] = {}
    for path in sorted(folder.rglob("*")):
        key = str(path.relative_to(folder))
        if path.is_symlink():
            seen[key] = ("link", os.readlink(path))
        elif path.is_file():
            seen[key] = path.read_bytes()
        else:
            seen[key] = ("dir" if path.is_dir() else "special", path.stat().st_mode)
    return seen


def edit_state(**changes: object) -> Callable[[Path], None]:
    def edit(out: Path) -> None:
        state_file = out / "checkpoint" / "state.json"
        state = json.loads(state_file.read_text())
        state.update(changes)
        state_file.write_text(json.dumps(state))
    return edit


def deep_log_line(out: Path) -> None:
    with (out / "metrics.jsonl").open("a") as log:
        log.write("[" * 100_000 + "]" * 100_000 + "\n")


def fifo_log(out: Path) -> None:
    (out / "metrics.jsonl").unlink()
    os.mkfifo(out / "metrics.jsonl")


def endless_log(out: Path) -> None:
    (out / "metrics.jsonl").unlink()
    (out / "metrics.jsonl").symlink_to("/dev/zero")


def drop_last_record(out: Path) -> None:
    log = out / "metrics.jsonl"
    log.write_text(log.read_text().splitlines()[0] + "\n")


DAMAGES = {
    "deep log line": (deep_log_line, "line 3 is nested too deeply"),
    "negative step": (edit_state(step=-5), "holds step -5"),
    "boolean step": (edit_state(step=True), "does not hold a step"),
    "FIFO log": (fifo_log, "is a device, FIFO or socket"),
    "log is /dev/zero": (endless_log, "is a device, FIFO or socket"),
    "step beyond max_steps": (edit_state(step=10**30), f"at step {10**30}, beyond max_steps 4"),
    "step beyond the log": (drop_last_record, "at step 2 but metrics.jsonl records only 1 step(s)"),
    "no log": (lambda out: (out / "metrics.jsonl").unlink(), "records only 0 step(s)"),
    "early_stop a list": (edit_state(early_stop=[1]), "damaged 'early_stop' section"),
    "early_stop unknown field": (edit_state(early_stop={"patience": 1}), "damaged 'early_stop' section"),
    "throughput text": (edit_state(throughput={"tokens": "many"}), "damaged 'throughput' section"),
    "throughput too large": (edit_state(throughput={"tokens": 10**400}), "damaged 'throughput' section"),
    "seconds text": (edit_state(train_seconds="x"), "damaged 'train_seconds'"),
}


@pytest.mark.parametrize("name", DAMAGES)
@pytest.mark.usefixtures("no_hang")
def test_resume_on_a_damaged_run_is_one_line_and_changes_nothing(run: Path, name: str,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    damage, message = DAMAGES[name]
    damage(run)
    before = snapshot(run)
    assert cli_main(["train", *TINY, "--out-dir", str(run), "--resume"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("variorum train: error: ") and err.count("\n") == 1 and message in err, err
    assert snapshot(run) == before


def test_an_intact_half_run_resumes_to_its_end(run: Path) -> None:
    assert cli_main(["train", *TINY, "--out-dir", str(run), "--resume"]) == 0
    steps = [json.loads(line)["step"] for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert steps == [1, 2, 3, 4] and (run / "bundle" / "card.md").is_file()


def test_a_fresh_run_over_a_fifo_log_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                no_hang: None) -> None:
    os.mkfifo(tmp_path / "metrics.jsonl")
    assert cli_main(["train", *TINY, "--out-dir", str(tmp_path)]) == 2
    assert "metrics.jsonl is a device, FIFO or socket" in capsys.readouterr().err
