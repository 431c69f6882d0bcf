"""The header of a llama.cpp GGUF file, parsed with every length checked before it is read.

A GGUF file starts with its magic and version, the counts of its tensors and metadata keys, the typed
key/value metadata and a table of tensor infos (name, dims in ggml's reversed order, ggml type, offset), then
the aligned tensor data. `read_header` reads the first part into a `Header` (metadata and `TensorInfo`s with
absolute offsets and byte sizes), without touching the tensor data.

Not `gguf.GGUFReader`: it builds a numpy array per token and per merge (about 4 s for a 49k-token vocabulary)
and trusts every count in the file, so a damaged array length makes it loop a very long time before failing;
here each count is compared with the bytes left before anything is read (`Cursor`), and the limits below bound
what a hostile file can ask for. engine/checkpoints/gguf_file.py checks the header against itself and reads
the tensors.
"""

from __future__ import annotations

import itertools
import math
import mmap
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from gguf.constants import GGML_QUANT_SIZES, GGUF_MAGIC, GGMLQuantizationType, GGUFValueType

from engine.checkpoints.inspect import CheckpointError

MAX_PARAMETERS = 8_000_000_000  # 32 GB as float32: the most a file may hold, and read_gguf build
MAX_GGUF_BYTES = 32 << 30  # a 7B model at 8 bits is 7.5 GB; far larger files are not for a desktop assistant
MAX_METADATA_KEYS = 1 << 16  # llama.cpp files have about 40
MAX_TENSORS = 1 << 16  # a 70B Llama has 723
MAX_ARRAY_LENGTH = 1 << 24  # the largest vocabularies and merge lists are a few hundred thousand entries
MAX_STRING_BYTES = 16 << 20  # one metadata string (a chat template is a few KB)
MAX_NAME_BYTES = 1024  # a tensor name (ggml allows 64)
MAX_ARRAY_NESTING = 2  # arrays of arrays are allowed by the format; none of the keys read here has them

GGUF_VERSIONS = (2, 3)  # version 1 counted in 32 bits; llama.cpp itself no longer reads it
DEFAULT_ALIGNMENT = 32  # where tensor data starts, unless general.alignment says otherwise

_SCALARS: dict[int, str] = {  # the fixed-size metadata value types → struct format (all little-endian)
    GGUFValueType.UINT8: "<B", GGUFValueType.INT8: "<b", GGUFValueType.UINT16: "<H", GGUFValueType.INT16: "<h",
    GGUFValueType.UINT32: "<I", GGUFValueType.INT32: "<i", GGUFValueType.FLOAT32: "<f", GGUFValueType.BOOL: "<?",
    GGUFValueType.UINT64: "<Q", GGUFValueType.INT64: "<q", GGUFValueType.FLOAT64: "<d",
}


@dataclass(frozen=True)
class TensorInfo:
    name: str
    dims: tuple[int, ...]  # ggml order: dims[0] is the row length (columns)
    ggml_type: GGMLQuantizationType
    start: int  # absolute offset of its data in the file
    nbytes: int

    @property
    def shape(self) -> tuple[int, ...]:
        """numpy / torch order: [rows, columns]."""
        return tuple(reversed(self.dims))


@dataclass(frozen=True)
class Header:
    metadata: dict[str, Any]
    tensors: dict[str, TensorInfo]


class Cursor:
    """Reads the header's little-endian values in order, each one checked to end inside the file."""

    def __init__(self, buffer: mmap.mmap, path: Path) -> None:
        self.buffer, self.path, self.size, self.pos = buffer, path, len(buffer), 0

    def short(self, what: str) -> CheckpointError:
        return CheckpointError(f"{self.path}: damaged or cut short: {what} runs past the end of the file "
                               f"({self.size:,} bytes)")

    def take(self, count: int, what: str) -> int:
        """The offset of the next `count` bytes, which the cursor moves past."""
        if count < 0 or self.pos + count > self.size:
            raise self.short(what)
        start, self.pos = self.pos, self.pos + count
        return start

    def scalar(self, fmt: str, what: str) -> Any:
        return struct.unpack_from(fmt, self.buffer, self.take(struct.calcsize(fmt), what))[0]

    def string(self, what: str, limit: int = MAX_STRING_BYTES) -> str:
        length = self.scalar("<Q", what)
        if length > limit:
            raise CheckpointError(f"{self.path}: damaged: {what} says it is {length:,} bytes long")
        start = self.take(length, what)
        try:
            return self.buffer[start:start + length].decode("utf-8")
        except UnicodeDecodeError:
            raise CheckpointError(f"{self.path}: damaged: {what} is not UTF-8 text") from None

    def value(self, value_type: int, what: str, depth: int = 0) -> Any:
        """One metadata value: a scalar, a string, or a list of either."""
        if value_type in _SCALARS:
            return self.scalar(_SCALARS[value_type], what)
        if value_type == GGUFValueType.STRING:
            return self.string(what)
        if value_type != GGUFValueType.ARRAY or depth >= MAX_ARRAY_NESTING:
            raise CheckpointError(f"{self.path}: damaged: {what} has an unknown value type {value_type}")
        item_type = self.scalar("<I", what)
        length = self.scalar("<Q", what)
        # every item takes at least one byte (a string eight): a length the file cannot hold is damage,
        # found before the loop below would run that many times
        smallest = struct.calcsize(_SCALARS[item_type]) if item_type in _SCALARS else 8
        if length > MAX_ARRAY_LENGTH or length * smallest > self.size - self.pos:
            raise CheckpointError(f"{self.path}: damaged or cut short: {what} says it has {length:,} items")
        if item_type in _SCALARS:
            start = self.take(length * smallest, what)
            values: list[Any] = np.frombuffer(self.buffer[start:self.pos], dtype=_SCALARS[item_type]).tolist()
            return values
        return [self.value(item_type, what, depth + 1) for _ in range(length)]


def open_checked(path: Path) -> tuple[int, Any]:
    """(size, open binary file) of a file that may be a GGUF file; CheckpointError otherwise."""
    try:
        size = path.stat().st_size
        if not path.is_file():
            raise CheckpointError(f"{path}: not a file")
        if size > MAX_GGUF_BYTES:
            raise CheckpointError(f"{path}: {size:,} bytes is larger than the {MAX_GGUF_BYTES >> 30} GiB "
                                  "Variorum reads")
        if size < 24:  # magic, version, two counts
            raise CheckpointError(f"{path}: not a GGUF file ({size} bytes)")
        return size, path.open("rb")
    except FileNotFoundError:
        raise CheckpointError(f"{path}: no such file") from None
    except OSError as error:
        raise CheckpointError(f"{path}: cannot be read ({error.strerror or error})") from None


def read_header(path: Path) -> Header:
    """The metadata and tensor infos of a GGUF file, every length and offset checked against the file."""
    size, file = open_checked(path)
    with file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as buffer:
        cursor = Cursor(buffer, path)
        if struct.unpack_from("<I", buffer, 0)[0] != GGUF_MAGIC:
            raise CheckpointError(f"{path}: not a GGUF file (it does not start with 'GGUF')")
        cursor.pos = 4
        version = cursor.scalar("<I", "the version")
        if version & 0xFFFF == 0:  # a big-endian file read little-endian (llama.cpp's own check)
            raise CheckpointError(f"{path}: a big-endian GGUF file; Variorum reads little-endian ones")
        if version not in GGUF_VERSIONS:
            raise CheckpointError(f"{path}: GGUF version {version}; Variorum reads versions 2 and 3")
        tensor_count = cursor.scalar("<Q", "the tensor count")
        key_count = cursor.scalar("<Q", "the metadata count")
        if tensor_count > MAX_TENSORS or key_count > MAX_METADATA_KEYS:
            raise CheckpointError(f"{path}: damaged: it says it has {tensor_count:,} tensors and "
                                  f"{key_count:,} metadata keys")
        metadata: dict[str, Any] = {}
        for index in range(key_count):
            key = cursor.string(f"metadata key {index}", MAX_NAME_BYTES)
            value_type = cursor.scalar("<I", key)
            if key in metadata:
                raise CheckpointError(f"{path}: damaged: metadata key {key} appears twice")
            metadata[key] = cursor.value(value_type, key)
        alignment = metadata.get("general.alignment", DEFAULT_ALIGNMENT)
        if not isinstance(alignment, int) or alignment <= 0 or alignment & (alignment - 1):
            raise CheckpointError(f"{path}: damaged: general.alignment {alignment!r} is not a power of two")
        infos: list[tuple[str, tuple[int, ...], int, int]] = []
        for index in range(tensor_count):
            name = cursor.string(f"the name of tensor {index}", MAX_NAME_BYTES)
            n_dims = cursor.scalar("<I", name)
            if not 1 <= n_dims <= 4:  # ggml's GGML_MAX_DIMS
                raise CheckpointError(f"{path}: damaged: tensor {name} has {n_dims} dimensions")
            dims = tuple(cursor.scalar("<Q", name) for _ in range(n_dims))
            infos.append((name, dims, cursor.scalar("<I", name), cursor.scalar("<Q", name)))
        data_start = -(-cursor.pos // alignment) * alignment  # rounded up to the alignment
    return Header(metadata, _tensor_infos(path, infos, data_start, alignment, size))


def _tensor_infos(path: Path, infos: list[tuple[str, tuple[int, ...], int, int]], data_start: int, alignment: int,
                  size: int) -> dict[str, TensorInfo]:
    """The tensor table's (name, dims, type, offset) entries as `TensorInfo`s, each checked: a known type,
    whole blocks, an aligned offset, data inside the file and apart from every other tensor's."""
    tensors: dict[str, TensorInfo] = {}
    for name, dims, type_id, offset in infos:
        if name in tensors:
            raise CheckpointError(f"{path}: damaged: tensor {name} appears twice")
        try:
            ggml_type = GGMLQuantizationType(type_id)
        except ValueError:
            raise CheckpointError(f"{path}: tensor {name} has an unknown ggml type {type_id} "
                                  "(made by a newer llama.cpp?)") from None
        elements = math.prod(dims)
        if elements == 0 or elements > MAX_PARAMETERS:
            raise CheckpointError(f"{path}: damaged: tensor {name} has shape {list(dims)}")
        block, block_bytes = GGML_QUANT_SIZES[ggml_type]
        if dims[0] % block:
            raise CheckpointError(f"{path}: damaged: tensor {name}'s rows of {dims[0]} are not whole "
                                  f"{ggml_type.name} blocks of {block}")
        if offset % alignment:  # llama.cpp refuses these too: the data would be read from the wrong place
            raise CheckpointError(f"{path}: damaged: tensor {name}'s data offset {offset:,} is not a multiple of "
                                  f"the file's alignment {alignment}")
        info = TensorInfo(name, dims, ggml_type, data_start + offset, elements // block * block_bytes)
        if info.start + info.nbytes > size:
            raise CheckpointError(f"{path}: cut short: tensor {name} ends at byte {info.start + info.nbytes:,} "
                                  f"of a {size:,}-byte file (download incomplete?)")
        tensors[name] = info
    _check_disjoint(path, tensors)
    return tensors


def _check_disjoint(path: Path, tensors: dict[str, TensorInfo]) -> None:
    """No two tensors' data overlap: a damaged offset pointing into another tensor would be read silently."""
    ordered = sorted(tensors.values(), key=lambda info: info.start)
    for before, after in itertools.pairwise(ordered):
        if after.start < before.start + before.nbytes:
            raise CheckpointError(f"{path}: damaged: the data of tensors {before.name} and {after.name} overlap")
