"""A run's metrics log, `metrics.jsonl`: one JSON record per trained step, read back when a run resumes.

The log is written by the loop (engine/training/loop.py), but a run folder can be damaged or tampered
with between runs, so reading it back holds to the small-file rules (engine/files/small_reads.py): a
regular file only (a FIFO would hang the resume, /dev/zero never ends), a size limit, and a line nested
too deeply for the parser is refused. Each of these is one `MetricsLogError` line, raised before anything
in the folder is changed. A line a kill cut short (not JSON at all) is dropped, as the kill left it.
"""

from __future__ import annotations

import json
from pathlib import Path

from engine.files.atomic_writes import write_text_atomic
from engine.files.small_reads import file_problem, read_small_bytes

METRICS_FILE = "metrics.jsonl"
# About a million steps' records (~200 bytes each): far beyond any run here, small enough to read at once.
METRICS_LOG_LIMIT = 256 * 2**20


class MetricsLogError(ValueError):
    """`metrics.jsonl` cannot be read back: not a regular file, too large, or a line nested too deeply."""


def logged_records(path: Path) -> list[tuple[int, str]]:
    """(step, line) of each complete record of the log at `path`; [] when there is no log."""
    if not path.exists() and not path.is_symlink():
        return []
    problem = file_problem(path)
    if problem is not None:
        raise MetricsLogError(f"the metrics log {path} {problem}; the run folder is damaged")
    try:
        data = read_small_bytes(path, METRICS_LOG_LIMIT)
    except OSError as error:
        raise MetricsLogError(f"cannot read the metrics log {path} ({error.strerror or error})") from None
    records = []
    for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), start=1):
        step = _logged_step(line, path, number)
        if step is not None:
            records.append((step, line))
    return records


def last_logged_step(path: Path) -> int:
    """The highest step the log at `path` records (0 for no log or no record)."""
    return max((step for step, _ in logged_records(path)), default=0)


def trim_metrics_log(path: Path, start: int) -> None:
    """Keep the records of steps <= start: a run killed after its last checkpoint redoes the later
    steps, and a fresh run starts a fresh log. A line a kill cut short is dropped; the log is
    rewritten atomically, so a kill meanwhile keeps the old one."""
    records = logged_records(path)
    if path.exists():
        write_text_atomic(path, "".join(line + "\n" for step, line in records if step <= start))


def _logged_step(line: str, path: Path, number: int) -> int | None:
    """The step of one record, or None for a line a kill cut short (or a record without a step)."""
    try:
        record = json.loads(line)
    except ValueError:
        return None
    except RecursionError:  # json's parser recurses once per nesting level: no record of ours is this deep
        raise MetricsLogError(f"the metrics log {path} line {number} is nested too deeply to be a record; "
                              "the run folder is damaged") from None
    step = record.get("step") if isinstance(record, dict) else None
    return step if isinstance(step, int) and not isinstance(step, bool) else None
