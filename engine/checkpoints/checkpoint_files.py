"""The files of a checkpoint folder, each read one way: a regular file inside the folder, bounded, typed.

A checkpoint folder comes from anywhere (a download, a copy, a cache), so every file the import reads
goes through here (engine/checkpoints/inspect.py decides what the files mean):

- `present(folder, name, what)`: the file, or one `CheckpointError` naming the real cause: missing, a
  broken link, a folder, a device, FIFO or socket (/dev/zero, a pipe), unreadable, or a link that leads
  out of the checkpoint. A Hugging Face cache snapshot's files are links into the model's own `blobs/`
  (`snapshots/<commit>/x` → `../../blobs/<sha>`), so there the model folder is the boundary;
- `read_json(...)` / `read_object(...)`: the file through engine/files/small_reads.py (the bundles' reader:
  regular files only, 64 MiB at most, UTF-8, valid JSON, nesting the parser can take), then a JSON object;
- `safetensors_shapes(path)`: the tensor names and shapes a safetensors file's header declares, checked
  against its length, without reading the tensors;
- `shard_name(index, name)`: a shard named by a weights index, which must be a file of the folder itself
  (never `../outside.safetensors` or an absolute path).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeGuard, TypeVar

from engine.config import ConfigError
from engine.files.small_reads import (
    SMALL_FILE_LIMIT,
    UnusableFileError,
    file_problem,
    inside_folder,
    parse_json,
    read_small_json,
    read_small_text,
)

HF_SNAPSHOTS = "snapshots"  # a cache model folder: models--org--name/{snapshots/<commit>, blobs}

T = TypeVar("T")


class CheckpointError(ConfigError):
    """A folder or name that is not an importable checkpoint; the message says which file and why."""


def boundary(folder: Path) -> Path:
    """The folder a checkpoint's files must stay inside: the folder, or a cache snapshot's model folder."""
    resolved = folder.resolve()
    if resolved.parent.name == HF_SNAPSHOTS and resolved.parent.parent.name.startswith("models--"):
        return resolved.parent.parent
    return resolved


def present(folder: Path, name: str, what: str) -> Path:
    """`folder / name`, a readable regular file inside the checkpoint, or a `CheckpointError` saying why not."""
    path = folder / name
    problem = file_problem(path)
    if problem == "does not exist":
        problem = "is a broken link" if path.is_symlink() else "is missing"
    if problem:
        raise CheckpointError(f"{folder}: {name} ({what}) {problem}")
    if not inside_folder(path, boundary(folder)):
        raise CheckpointError(f"{folder}: {name} ({what}) is a link to {path.resolve()}, outside the checkpoint "
                              "folder; copy the file into the folder instead")
    return path


def _bounded(folder: Path, name: str, what: str, reader: Callable[[Path, str], T]) -> T:
    """`reader` (one of the bundles' bounded readers) on a file of the checkpoint that is `present`; a
    `CheckpointError` for any way it fails."""
    path = present(folder, name, what)
    try:
        return reader(path, f"{path} ({what})")
    except UnusableFileError as error:
        raise CheckpointError(str(error)) from None


def read_json(folder: Path, name: str, what: str) -> Any:
    """A JSON file of the checkpoint, or a `CheckpointError`."""
    return _bounded(folder, name, what, read_small_json)


def read_object(folder: Path, name: str, what: str) -> dict[str, Any]:
    """`read_json`, which must give a JSON object."""
    value = read_json(folder, name, what)
    if not isinstance(value, dict):
        raise CheckpointError(f"{folder / name}: not a {what} (a JSON object, not {type(value).__name__})")
    return value


def read_text(folder: Path, name: str, what: str) -> str:
    """A UTF-8 text file of the checkpoint, bounded like the JSON files."""
    return _bounded(folder, name, what, read_small_text)


def is_count(value: Any) -> TypeGuard[int]:
    """An integer that JSON wrote as one (not a bool, not a float)."""
    return isinstance(value, int) and not isinstance(value, bool)


def shard_name(index: Path, name: Any) -> str:
    """A shard a weights index names: a plain file name of the checkpoint folder."""
    if not isinstance(name, str) or not name or name in (".", "..") or "/" in name or "\\" in name:
        raise CheckpointError(f"{index}: names the shard {name!r}, which is not a file name in the checkpoint "
                              "folder")
    return name


def safetensors_shapes(path: Path) -> dict[str, tuple[int, ...]]:
    """Tensor name → shape from a safetensors file's header (8-byte length, JSON, then the data), checked to be
    a header of tensors that all end inside the file (a download cut short does not)."""
    size = path.stat().st_size
    with path.open("rb") as file:
        head = file.read(8)
        if len(head) < 8:
            raise CheckpointError(f"{path}: too short to be a safetensors file (download cut short?)")
        (header_len,) = struct.unpack("<Q", head)
        if header_len > min(size - 8, SMALL_FILE_LIMIT):
            raise CheckpointError(f"{path}: not a safetensors file, or cut short")
        try:
            header = parse_json(file.read(header_len), f"{path}: its safetensors header")
        except UnusableFileError as error:
            raise CheckpointError(f"{error} (damaged?)") from None
    if not isinstance(header, dict):
        raise CheckpointError(f"{path}: its safetensors header is damaged (not a JSON object)")
    shapes: dict[str, tuple[int, ...]] = {}
    end = 0
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        offsets = entry.get("data_offsets") if isinstance(entry, dict) else None
        shape = entry.get("shape") if isinstance(entry, dict) else None
        if (not isinstance(offsets, list) or len(offsets) != 2 or not all(is_count(o) and o >= 0 for o in offsets)
                or not isinstance(shape, list) or not all(is_count(d) and d >= 0 for d in shape)):
            raise CheckpointError(f"{path}: its safetensors header is damaged (tensor {name!r:.80})")
        shapes[name] = tuple(shape)
        end = max(end, offsets[1])
    if 8 + header_len + end > size:
        raise CheckpointError(f"{path}: {size:,} bytes, its header declares {8 + header_len + end:,} "
                              "(download cut short?)")
    return shapes
