"""Write a directory atomically: build it in a hidden sibling, then move it into place.

A crash or a full disk mid-write leaves the previous bundle or checkpoint intact (and no
half-written one under its name); the staging folder is removed on any failure.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def atomic_directory(directory: Path) -> Iterator[Path]:
    """Yield an empty staging folder; on success it replaces `directory`, on failure it is removed."""
    directory.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{directory.name}-", dir=directory.parent))
    try:
        yield staging
        if directory.exists():
            shutil.rmtree(directory)
        staging.rename(directory)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
