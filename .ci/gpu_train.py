"""Train recipes side by side on a lent GPU machine within a time budget, and pack what comes back.

Each recipe's trainer runs on CUDA in its own process with the recipe's max_steps. Between steps 10
and 40 its pace is measured; a run that would not write its bundle before the deadline is started
again once, with the steps that fit (its learning-rate schedule is cosine over max_steps, so it
cannot simply be stopped early). At the deadline what still runs is ended. Each finished run's
bundle, metrics log, loss curve, final checkpoint state and log are packed into OUT/<name>.tar (one
file each, as the machine's transfer back takes few files), with OUT/summary.json beside them; an
unfinished run's tar holds its log and metrics, so a failure is read without another call.
Run by `.ci/gpu-train` (docs/gpu-check.md, "Training recipes").
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

PACE_FROM, PACE_TO = 10, 40  # steps between which a run's seconds per step are measured
FINISH_S = 40.0  # after the last step: the final checkpoint and the bundle are written
FEWEST_STEPS = 100  # a refitted run shorter than this is not worth starting
RUNS = Path("runs/gpu")


@dataclass
class Run:
    """One recipe's training process and what is known of its pace."""

    recipe: Path
    name: str
    trainer: str
    max_steps: int
    process: subprocess.Popen[bytes] | None = None
    started: float = 0.0
    seen: dict[int, float] = field(default_factory=dict)  # step -> when it was first seen logged
    refitted: bool = False
    device: str = "cuda"
    log: IO[str] | None = None

    @property
    def out(self) -> Path:
        return RUNS / self.name

    def start(self, max_steps: int) -> None:
        self.max_steps, self.seen = max_steps, {}
        shutil.rmtree(self.out, ignore_errors=True)
        self.out.mkdir(parents=True)
        command = [sys.executable, "-m", "engine.cli", self.trainer, "--config", str(self.recipe), "--device",
                   self.device, "--out-dir", str(self.out), "--max-steps", str(max_steps), "--no-progress"]
        self.log = (RUNS / f"{self.name}.log").open("a")
        self.log.write(f"$ {' '.join(command)}\n")
        self.log.flush()
        self.process = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT)
        self.started = time.monotonic()
        print(f"{self.name}: started with {max_steps} steps", flush=True)

    def logged_step(self) -> int:
        metrics = self.out / "metrics.jsonl"
        steps = [json.loads(line).get("step", 0) for line in _complete_lines(metrics)]
        return max(steps, default=0)

    def pace(self) -> float | None:
        """Seconds per step between the first step seen at or after PACE_FROM and at or after PACE_TO."""
        late = [s for s in self.seen if s >= PACE_TO]
        early = [s for s in self.seen if s >= PACE_FROM]
        if not late or min(early) == min(late):
            return None
        first, last = min(early), min(late)
        return (self.seen[last] - self.seen[first]) / (last - first)


def _complete_lines(path: Path) -> list[str]:
    if not path.is_file():
        return []
    lines = path.read_text(errors="replace").splitlines()
    good = []
    for line in lines:
        try:
            json.loads(line)
        except ValueError:
            continue
        good.append(line)
    return good


def watch(runs: list[Run], deadline: float) -> None:
    """Poll each run's log until all have ended or the deadline passes; refit a run that would overrun."""
    while any(r.process is not None and r.process.poll() is None for r in runs):
        now = time.monotonic()
        if now > deadline:
            for run in runs:
                if run.process is not None and run.process.poll() is None:
                    print(f"{run.name}: deadline reached at step {run.logged_step()}; ended", flush=True)
                    run.process.kill()
            return
        for run in runs:
            if run.process is None or run.process.poll() is not None:
                continue
            step = run.logged_step()
            run.seen.setdefault(step, now)
            pace = run.pace()
            if pace is None or run.refitted:
                continue
            run.refitted = True
            finish = now + (run.max_steps - step) * pace + FINISH_S
            print(f"{run.name}: {pace:.3f} s a step; {run.max_steps} steps end in {finish - now:.0f} s", flush=True)
            if finish > deadline:
                startup = run.seen[min(s for s in run.seen if s >= PACE_FROM)] - run.started - PACE_FROM * pace
                fit = int((deadline - now - startup - FINISH_S) / pace)
                run.process.kill()
                run.process.wait()
                if fit < FEWEST_STEPS:
                    print(f"{run.name}: only {fit} steps would fit; not started again", flush=True)
                    continue
                run.start(fit)
                run.refitted = True
        time.sleep(2.0)


def pack(run: Run, out: Path) -> dict[str, Any]:
    """OUT/<name>.tar of a finished run; what is known of it, finished or not."""
    state_file = run.out / "checkpoint" / "state.json"
    state = json.loads(state_file.read_text()) if state_file.is_file() else {}
    finished = (run.out / "bundle" / "card.md").is_file() and state.get("step") == run.max_steps
    records = [json.loads(line) for line in _complete_lines(run.out / "metrics.jsonl")]
    valid = [r for r in records if any(k.startswith("val") for k in r)]
    summary = {"recipe": str(run.recipe), "max_steps": run.max_steps, "finished": finished,
               "last_step": state.get("step"), "seconds": round(time.monotonic() - run.started),
               "seconds_per_step": run.pace(), "valid": valid}
    with tarfile.open(out / f"{run.name}.tar", "w") as tar:  # an unfinished run's log and metrics say why
        if finished:
            tar.add(run.out / "bundle", arcname=f"{run.name}/bundle")
        for name in ("metrics.jsonl", "loss_curve.png", "checkpoint/state.json"):
            if (run.out / name).is_file():
                tar.add(run.out / name, arcname=f"{run.name}/{name}")
        tar.add(RUNS / f"{run.name}.log", arcname=f"{run.name}/train.log")
    return summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("recipes", nargs="+", type=Path)
    parser.add_argument("--budget-s", type=float, required=True, help="seconds until every run must have ended")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--device", default="cuda", help="cpu only for a trial run away from a GPU machine")
    args = parser.parse_args()
    deadline = time.monotonic() + args.budget_s
    runs = []
    for path in args.recipes:
        recipe = json.loads(path.read_text())
        runs.append(Run(path, recipe["recipe"]["name"], recipe["recipe"]["trainer"], recipe["train"]["max_steps"],
                        device=args.device))
    RUNS.mkdir(parents=True, exist_ok=True)
    for run in runs:
        run.start(run.max_steps)
    watch(runs, deadline)
    summary = {run.name: pack(run, args.out) for run in runs}
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps({name: {k: v for k, v in s.items() if k != "valid"} for name, s in summary.items()}, indent=2))
    for name, s in summary.items():
        print(name, "valid:", s["valid"][-2:])
    return 0 if all(s["finished"] for s in summary.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
