"""`.ci/gpu_train.py`, the GPU machine's training supervisor: a run's pace from its metrics log, and what comes
back of a finished and of a failed run."""

from __future__ import annotations

import importlib.util
import json
import sys
import tarfile
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).parents[2] / ".ci" / "gpu_train.py"


@pytest.fixture
def gpu_train(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    spec = importlib.util.spec_from_file_location("gpu_train", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "gpu_train", module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "RUNS", tmp_path / "runs")
    return module


def test_the_pace_is_measured_between_the_first_steps_seen_past_10_and_past_40(gpu_train: ModuleType) -> None:
    run = gpu_train.Run(Path("r.json"), "r", "train-permgen", 100)
    run.seen = {0: 0.0, 14: 30.0}
    assert run.pace() is None  # nothing past step 40 yet
    run.seen = {0: 0.0, 45: 30.0}  # the first poll past step 10 is past 40 too: no interval yet
    assert run.pace() is None
    run.seen = {0: 0.0, 14: 30.0, 33: 34.0, 52: 37.8}
    assert run.pace() == pytest.approx(7.8 / 38)


def _run_folder(gpu_train: ModuleType, name: str, step: int, bundle: bool) -> object:
    run = gpu_train.Run(Path(f"{name}.json"), name, "train-permgen", 100)
    (run.out / "checkpoint").mkdir(parents=True)
    (run.out / "checkpoint" / "state.json").write_text(json.dumps({"step": step}))
    (run.out / "metrics.jsonl").write_text(json.dumps({"step": step, "valid_nll_natural": 2.5}) + "\n{\"step\": 10")
    (gpu_train.RUNS / f"{name}.log").write_text("Traceback: the export failed\n")
    if bundle:
        (run.out / "bundle").mkdir()
        (run.out / "bundle" / "card.md").write_text("# card\n")
    return run


def test_a_finished_run_comes_back_whole_and_a_failed_one_with_its_log(gpu_train: ModuleType, tmp_path: Path) -> None:
    finished = _run_folder(gpu_train, "done", 100, bundle=True)
    failed = _run_folder(gpu_train, "failed", 100, bundle=False)
    out = tmp_path / "out"
    out.mkdir()
    done, broken = gpu_train.pack(finished, out), gpu_train.pack(failed, out)
    assert done["finished"] and not broken["finished"]
    assert done["valid"] == [{"step": 100, "valid_nll_natural": 2.5}]  # the line a kill cut short is skipped
    with tarfile.open(out / "done.tar") as tar:
        assert "done/bundle/card.md" in tar.getnames() and "done/train.log" in tar.getnames()
    with tarfile.open(out / "failed.tar") as tar:
        assert sorted(tar.getnames()) == ["failed/checkpoint/state.json", "failed/metrics.jsonl", "failed/train.log"]
