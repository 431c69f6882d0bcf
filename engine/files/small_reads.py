"""Reading the small files a bundle, a config or a recipe holds: regular files only, with a size limit.

Such files come from anywhere (a downloaded bundle, a shared recipe), and a name can point at
something that is not a file: a symlink to /dev/zero never ends (reading it fills memory), opening a
FIFO waits forever for a writer, a folder cannot be read at all. `read_small_bytes` opens without
blocking, checks what it opened is a regular file and reads at most `limit` bytes, so each of these
is an `OSError` naming the path instead of a hang or a `MemoryError`. `read_small_text` and
`read_small_json` turn every way a text or JSON file can fail (those, bytes that are not UTF-8, bad
JSON, nesting too deep for the parser) into one `UnusableFileError` line.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path
from typing import Any

# Larger than any file a bundle holds (a 50k-token tokenizer.json is ~4 MB) and small enough to read at once.
SMALL_FILE_LIMIT = 64 * 2**20
# O_NONBLOCK: opening a FIFO returns at once instead of waiting for a writer (absent on Windows, which has none).
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)


class NotAFileError(OSError):
    """A path names a device, FIFO, socket or folder, or a file over the size limit; str() is one clear line."""

    def __str__(self) -> str:
        return f"{self.filename} {self.strerror}"


class UnusableFileError(ValueError):
    """A small file cannot be used: unreadable, not a regular file, too large, not UTF-8, not JSON, too deep."""


def file_problem(path: Path) -> str | None:
    """Why `path` cannot be read as a file, worded to follow its name ("does not exist", "is a folder, not a
    file", "cannot be read (Permission denied)"), or None when it can. Libraries that open files themselves
    (safetensors, torch) name a wrong cause for an unreadable one, so callers ask this first."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return "does not exist"
    except OSError as error:
        return f"cannot be read ({error.strerror})"
    if stat.S_ISDIR(mode):
        return "is a folder, not a file"
    if not stat.S_ISREG(mode):
        return "is a device, FIFO or socket, not a regular file"
    try:
        os.close(os.open(path, _OPEN_FLAGS))
    except OSError as error:
        return f"cannot be read ({error.strerror})"
    return None


def read_small_bytes(path: Path, limit: int | None = None) -> bytes:
    """The bytes of the regular file `path` (symlinks followed), or `OSError` (`NotAFileError` when it is
    not a regular file or is larger than `limit`, default `SMALL_FILE_LIMIT`)."""
    limit = SMALL_FILE_LIMIT if limit is None else limit
    descriptor = os.open(path, _OPEN_FLAGS)
    try:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            kind = "a folder" if stat.S_ISDIR(mode) else "a device, FIFO or socket"
            raise NotAFileError(errno.EINVAL, f"is {kind}, not a regular file", str(path))
        data = _read_up_to(descriptor, limit + 1)
    finally:
        os.close(descriptor)
    if len(data) > limit:
        raise NotAFileError(errno.EFBIG, f"is larger than the {limit:,} bytes allowed", str(path))
    return data


def _read_up_to(descriptor: int, size: int) -> bytes:
    chunks: list[bytes] = []
    while size > 0 and (chunk := os.read(descriptor, min(size, 2**20))):
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def read_small_text(path: Path, label: str | None = None, errors: str = "strict") -> str:
    """A small UTF-8 text file, or an `UnusableFileError` saying why not; `label` names the file (default: its
    path); `errors="replace"` shows bytes that are not UTF-8 as U+FFFD instead of refusing them."""
    name = str(path) if label is None else label
    try:
        return read_small_bytes(path).decode("utf-8", errors)
    except OSError as error:
        raise UnusableFileError(f"cannot read {name} ({error.strerror or error})") from None
    except UnicodeDecodeError:
        raise UnusableFileError(f"{name} is not UTF-8 text (a binary file?)") from None


def read_small_json(path: Path, label: str | None = None) -> Any:
    """A small JSON file, or an `UnusableFileError` saying why not (as `read_small_text`, or bad JSON, or nesting
    too deep for the parser)."""
    return parse_json(read_small_text(path, label), str(path) if label is None else label)


def parse_json(text: str | bytes, name: str) -> Any:
    """JSON already read (a file's, or a header inside one, as safetensors keeps), or an `UnusableFileError`
    naming `name` when it is not UTF-8, not JSON or nested too deeply for the parser."""
    try:
        return json.loads(text)
    except UnicodeDecodeError:
        raise UnusableFileError(f"{name} is not UTF-8 text (a binary file?)") from None
    except json.JSONDecodeError as error:
        raise UnusableFileError(f"{name} is not valid JSON ({error})") from None
    except RecursionError:  # json's parser recurses once per nesting level
        raise UnusableFileError(f"{name} is nested too deeply to be read") from None


def inside_folder(path: Path, folder: Path) -> bool:
    """Whether `path`, its links followed, is `folder` or lies under it (also followed): a name in a folder
    from elsewhere can be a link to any file on the computer."""
    return path.resolve().is_relative_to(folder.resolve())


def links_out_of(folder: Path, limit: int = 10_000) -> list[Path]:
    """The links under `folder` (its subfolders too, links to folders not entered) to a file or folder outside it,
    among its first `limit` entries: a model folder is a handful of files, so a larger one is not searched
    further. (Links to devices or nowhere are left to the readers, which name those.)"""
    found, seen = [], 0
    for root, folders, files in os.walk(folder):
        for name in [*folders, *files]:
            seen += 1
            path = Path(root) / name
            if path.is_symlink() and (path.is_file() or path.is_dir()) and not inside_folder(path, folder):
                found.append(path)
        if seen >= limit:
            break
    return found
