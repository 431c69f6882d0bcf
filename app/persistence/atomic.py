"""Atomic file writes: a crash mid-write leaves either the old file or the new one, never half of each.

The new file keeps the permission bits of the file it replaces; a new file gets the umask default
(as `open()` would give it), not the 0600 that a bare `mkstemp` leaves behind.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

DEFAULT_FILE_MODE = 0o666  # what open() asks for before the umask is applied


def write_text_atomic(path: Path, text: str, encoding: str = "utf-8") -> None:
    """Write `text` to a temp file in the same folder, fsync it, then rename it over `path`.

    Raises UnicodeEncodeError (before touching the disk) when `text` cannot be written in `encoding`.
    """
    data = text.encode(encoding)
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = _target_mode(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _target_mode(path: Path) -> int:
    """Permission bits for the new file: those of the existing file, else 0666 minus the umask."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return DEFAULT_FILE_MODE & ~_current_umask()


def _current_umask() -> int:
    umask = os.umask(0o022)  # reading the umask means setting it; put it straight back
    os.umask(umask)
    return umask
