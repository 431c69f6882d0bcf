"""Graph weights kept in the bundle's own weights file, so that an export stores no second copy.

torch's exporter writes every weight into the graph, which doubled a bundle's size on disk.
`share_bundle_weights` replaces each graph weight whose bytes equal a tensor of the bundle's
`model.safetensors` by a reference to that tensor's bytes, in ONNX's external-data fields
(location `model.safetensors`, offset, length). The exporter's constant folding stores an
`nn.Linear` weight transposed for MatMul: such a weight refers to the stored tensor behind a
Transpose node. Weights under 1024 values (biases, norms) stay inside.

`load_graph` fills the references from the bundle's file and folds those Transposes back into
weights, which gives the exporter's graph again. The runtime has by then checked the file's
sha256 against the export record, so the bytes are the ones the export referred to. ONNX
Runtime cannot open such a graph by path (it refuses external data outside the graph's folder, and
the graphs live in `<bundle>/onnx/`): `engine.onnx.session` gives it the filled graph as bytes.
"""

from __future__ import annotations

import hashlib
import json
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from engine.bundles.bundle import WEIGHTS_FILE

MIN_SHARED_VALUES = 1024
_ONNX_TYPE = {"F32": 1, "F16": 10, "BF16": 16}  # safetensors dtype → onnx.TensorProto FLOAT, FLOAT16, BFLOAT16
_WIDTH = {1: np.uint32, 10: np.uint16, 16: np.uint16}  # onnx float type → same-width integers (for transposing)


@dataclass(frozen=True)
class StoredTensor:
    """Where one tensor's bytes lie in a safetensors file (offsets from the file's start)."""

    dtype: str  # safetensors' name: F32, F16, BF16
    shape: list[int]
    offset: int
    length: int


def stored_tensors(weights: Path) -> list[StoredTensor]:
    """The float tensors of a safetensors file: an 8-byte header size, a JSON header, then the data."""
    with weights.open("rb") as handle:
        (header_size,) = struct.unpack("<Q", handle.read(8))
        header = json.loads(handle.read(header_size))
    start = 8 + header_size
    return [StoredTensor(entry["dtype"], list(entry["shape"]), start + entry["data_offsets"][0],
                         entry["data_offsets"][1] - entry["data_offsets"][0])
            for name, entry in header.items() if name != "__metadata__" and entry["dtype"] in _ONNX_TYPE]


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def share_bundle_weights(model: Any, weights: Path) -> int:
    """Refer the onnx `model`'s weights found in the `weights` file (as stored, or transposed) to it → how many."""
    from onnx import TensorProto, helper

    blob = weights.read_bytes()
    direct: dict[tuple[int, str], StoredTensor] = {}
    transposed: dict[tuple[int, str], StoredTensor] = {}
    for tensor in stored_tensors(weights):
        if int(np.prod(tensor.shape)) < MIN_SHARED_VALUES:
            continue
        data, kind = blob[tensor.offset : tensor.offset + tensor.length], _ONNX_TYPE[tensor.dtype]
        direct[(kind, _digest(data))] = tensor
        if len(tensor.shape) == 2:
            flipped = np.frombuffer(data, dtype=_WIDTH[kind]).reshape(tensor.shape).T.tobytes()
            transposed[(kind, _digest(flipped))] = tensor
    graph, shared = model.graph, 0
    for weight in graph.initializer:
        if weight.data_location == TensorProto.EXTERNAL or not weight.raw_data \
                or int(np.prod(weight.dims)) < MIN_SHARED_VALUES:
            continue
        key = (weight.data_type, _digest(weight.raw_data))
        if key in direct and list(weight.dims) == direct[key].shape:
            _refer(weight, direct[key])
        elif key in transposed and list(weight.dims) == transposed[key].shape[::-1]:
            name = weight.name
            weight.name = f"{name}.stored"
            _refer(weight, transposed[key])
            graph.node.insert(0, helper.make_node("Transpose", [weight.name], [name], perm=[1, 0]))
        else:
            continue
        shared += 1
    return shared


def _refer(weight: Any, tensor: StoredTensor) -> None:
    """Make the onnx initializer `weight` a reference to `tensor`'s bytes in the bundle's weights file."""
    from onnx import TensorProto

    del weight.dims[:]
    weight.dims.extend(tensor.shape)
    weight.ClearField("raw_data")
    weight.data_location = TensorProto.EXTERNAL
    for key, value in (("location", WEIGHTS_FILE), ("offset", str(tensor.offset)), ("length", str(tensor.length))):
        entry = weight.external_data.add()
        entry.key, entry.value = key, value


def load_graph(path: Path, weights: bytes) -> Any:
    """The onnx model at `path` with its references into the bundle's weights file (its bytes, `weights`,
    read once for all of an export's graphs) filled in."""
    import onnx
    from onnx import TensorProto

    model = onnx.load(str(path), load_external_data=False)
    referring = [w for w in model.graph.initializer if w.data_location == TensorProto.EXTERNAL]
    if not referring:
        return model
    for weight in referring:
        where = {entry.key: entry.value for entry in weight.external_data}
        if where.get("location") != WEIGHTS_FILE:
            raise ValueError(f"weight {weight.name} refers to {where.get('location')!r}, not {WEIGHTS_FILE}")
        start, length = int(where["offset"]), int(where["length"])
        if start + length > len(weights):
            raise ValueError(f"weight {weight.name} lies past the end of {WEIGHTS_FILE}")
        weight.raw_data = weights[start : start + length]
        weight.data_location = TensorProto.DEFAULT
        del weight.external_data[:]
    _fold_transposes(model)
    return model


def _fold_transposes(model: Any) -> None:
    """Turn each Transpose that `share_bundle_weights` put in front of a stored weight back into the
    transposed weight, so the graph is the exporter's again (ONNX Runtime's quantizer only finds
    weights that are initializers)."""
    from onnx import helper

    graph = model.graph
    stored = {w.name: w for w in graph.initializer if w.name.endswith(".stored")}
    for node in [n for n in graph.node if n.op_type == "Transpose" and n.input[0] in stored]:
        weight = stored.pop(node.input[0])
        values = np.frombuffer(weight.raw_data, dtype=_WIDTH[weight.data_type]).reshape(tuple(weight.dims))
        graph.initializer.remove(weight)
        graph.initializer.append(helper.make_tensor(node.output[0], weight.data_type, values.shape[::-1],
                                                    values.T.tobytes(), raw=True))
        graph.node.remove(node)
