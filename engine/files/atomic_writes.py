"""Atomic writes of files and directories: a crash (even `kill -9`) leaves the old content or the new, never a mix.

A file is written to a temp file in the same folder, fsynced, then renamed over the target. It
keeps the permission bits of the file it replaces; a new file gets `0666 & ~umask`, as `open()`
would give it (not the 0600 of a bare `mkstemp`), unless the caller asks for a mode (0600 for
private text).

A directory is built in a hidden sibling, then swapped into place. Its files and folders get the
umask defaults (`0666`/`0777 & ~umask`) whatever wrote them (safetensors writes 0600, `mkdtemp` makes
0700), so every file of a bundle or checkpoint has the same permissions. The swap never leaves a
moment without a complete folder on disk:

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
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

DEFAULT_FILE_MODE = 0o666  # what open() asks for before the umask is applied
DEFAULT_DIR_MODE = 0o777  # what mkdir() asks for


def current_umask() -> int:
    umask = os.umask(0o022)  # reading the umask means setting it; put it straight back
    os.umask(umask)
    return umask


def _existing_mode(path: Path) -> int:
    """Permission bits for a new version of `path`: those of the file it replaces, else 0666 minus the umask."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return DEFAULT_FILE_MODE & ~current_umask()


def _fsync(path: Path) -> None:
    with path.open("rb") as handle:
        os.fsync(handle.fileno())


@contextmanager
def atomic_file(path: Path, mode: int | None = None) -> Iterator[Path]:
    """Yield a temp path beside `path` to write; on success it is fsynced and renamed over `path`
    (with `mode`, else the permission bits in the module docstring); on failure it is removed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    target_mode = _existing_mode(path) if mode is None else mode
    handle, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(handle)
    temp = Path(name)
    try:
        yield temp
        _fsync(temp)
        os.chmod(temp, target_mode)
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def write_bytes_atomic(path: Path, data: bytes, mode: int | None = None) -> None:
    """Replace `path` with `data` atomically (see `atomic_file`)."""
    with atomic_file(path, mode) as temp:
        temp.write_bytes(data)


def write_text_atomic(path: Path, text: str, encoding: str = "utf-8", mode: int | None = None) -> None:
    """Replace `path` with `text` atomically; a UnicodeEncodeError is raised before the disk is touched."""
    write_bytes_atomic(path, text.encode(encoding), mode)


def _default_modes(directory: Path) -> None:
    """Give `directory` and everything in it the umask's default permission bits."""
    umask = current_umask()
    for folder, _, files in os.walk(directory):
        os.chmod(folder, DEFAULT_DIR_MODE & ~umask)
        for name in files:
            os.chmod(os.path.join(folder, name), DEFAULT_FILE_MODE & ~umask)


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
        _default_modes(staging)
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
