"""Kill a tiny `variorum train` at every K-th file operation and check that the next run recovers.

Usage: python -m tests.engine.kill_sweep [--every K] [--resume]

For each kill point N = 1, 1 + K, … up to the operations a whole run makes (`kill_driver count`), a
fresh run (or, with --resume, a run resuming from a 1-step checkpoint) is SIGKILLed at operation N,
then `assert_usable` (tests/engine/lm/test_train_kills.py) resumes it and checks the bundle and the log.
Prints tried / handled / failed. Too slow for the suite (a few seconds per point); the suite keeps
the named kill points of test_train_kills.py.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from engine.lm.train import main as train_main
from tests.engine.lm.test_train_kills import ROOT, assert_usable, killed_run, train_args


def operation_count(out: Path, *extra: str) -> int:
    """File operations of one whole run (the driver's `count` mode prints them last)."""
    child = subprocess.run([sys.executable, "-m", "tests.engine.kill_driver", "count", *train_args(out), *extra],
                           cwd=ROOT, capture_output=True, text=True, check=True)
    return int(re.findall(r"OPERATIONS (\d+)", child.stdout + child.stderr)[-1])


def prepared(out: Path, resume: bool) -> tuple[str, ...]:
    """Extra trainer flags, after giving a resumed run its 1-step checkpoint."""
    if not resume:
        return ()
    assert train_main([*train_args(out), "--chunk-steps", "1"]) == 0
    return ("--resume",)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--every", type=int, default=3)
    parser.add_argument("--resume", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        total = operation_count(Path(tmp) / "count", *prepared(Path(tmp) / "count", args.resume))
        failed = []
        points = range(1, total + 1, args.every)
        for n in points:
            out = Path(tmp) / f"kill-{n}"
            killed_run(out, str(n), *prepared(out, args.resume))
            try:
                assert_usable(out)
            except Exception as error:  # any failure to recover counts, with its reason
                failed.append(f"{n}: {error!r}")
    print(f"tried {len(points)} / handled {len(points) - len(failed)} / failed {len(failed)}")
    print("\n".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
