"""Write a directory atomically: build it in a hidden sibling, then swap it into place.

The swap never leaves a moment without a complete folder on disk:

1. the new content is written to `.<name>-staging-XXXX`;
2. the current `<name>` is renamed aside to `.<name>-previous-XXXX`;
3. the staging folder is renamed to `<name>`;
4. the previous folder is deleted.

A `kill -9` between 2 and 3 leaves only the previous folder, aside; `recover_directory` (run
before every write and by readers such as the checkpoint loader) renames it back and deletes
any other `.<name>-*` leftovers (half-written staging folders, a previous folder already
replaced). A failure inside the `with` block removes the staging folder and keeps `<name>`.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def _leftovers(directory: Path, kind: str) -> list[Path]:
    """Hidden siblings of `directory` of this kind ("staging", "previous" or "" for any), oldest first."""
    if not directory.parent.is_dir():
        return []
    found = directory.parent.glob(f".{directory.name}-{kind}*")
    return sorted((p for p in found if p.is_dir()), key=lambda p: p.stat().st_mtime)


def recover_directory(directory: Path) -> None:
    """Finish or undo a swap that a crash interrupted, and delete leftover hidden siblings.

    If `directory` is missing but a previous copy was set aside, that copy is moved back (it is
    complete: it was the live folder until step 2). Staging folders are always incomplete.
    """
    previous = _leftovers(directory, "previous-")
    if not directory.exists() and previous:
        with contextlib.suppress(OSError):  # OSError: another process (a DDP rank) restored it first
            previous.pop().rename(directory)  # the newest set-aside copy was the live one
    for leftover in _leftovers(directory, ""):
        shutil.rmtree(leftover, ignore_errors=True)


@contextmanager
def atomic_directory(directory: Path) -> Iterator[Path]:
    """Yield an empty staging folder; on success it replaces `directory`, on failure it is removed."""
    directory.parent.mkdir(parents=True, exist_ok=True)
    recover_directory(directory)
    staging = Path(tempfile.mkdtemp(prefix=f".{directory.name}-staging-", dir=directory.parent))
    try:
        yield staging
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    previous: Path | None = None
    if directory.exists():
        previous = Path(tempfile.mkdtemp(prefix=f".{directory.name}-previous-", dir=directory.parent))
        directory.replace(previous)  # an empty target directory is replaced by rename(2)
    staging.rename(directory)
    if previous is not None:
        shutil.rmtree(previous, ignore_errors=True)
