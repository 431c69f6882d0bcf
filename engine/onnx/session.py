"""Open a bundle's exported graphs with ONNX Runtime, after checking they belong to the bundle.

`open_graphs` raises `OnnxUnavailable` with one sentence saying why the export cannot be used —
no onnxruntime package, no export, an export of other weights (the bundle was retrained), a
damaged or foreign .onnx file — and callers print it and decode with torch instead
(`engine.onnx.runtime`). Providers: CUDA when the model is on a GPU and the
installed onnxruntime-gpu offers it, the CPU provider otherwise; CPU sessions run the step on one
thread (see `_session`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

import torch

from engine.bundles.bundle import WEIGHTS_FILE
from engine.files.small_reads import UnusableFileError, read_small_json
from engine.onnx import EXPORT_FILE, ONNX_DIR
from engine.onnx.export_format import READABLE_FORMATS, file_sha256
from engine.onnx.shared_weights import load_graph


class OnnxUnavailable(Exception):
    """The bundle's ONNX export cannot be used here; the message says why."""


@dataclass
class OpenGraphs:
    """ONNX Runtime sessions of one bundle's graphs (by role: "decoder", "encoder"), with the export record."""

    sessions: dict[str, Any]  # role → onnxruntime.InferenceSession
    record: dict[str, Any]
    device: torch.device

    @property
    def provider(self) -> str:
        return str(self.sessions["decoder"].get_providers()[0])


def exported(bundle_dir: Path) -> bool:
    """Whether the bundle has an export record (it may still turn out stale or damaged)."""
    return (Path(bundle_dir) / ONNX_DIR / EXPORT_FILE).is_file()


def _import_onnxruntime() -> Any:
    try:
        import onnx  # noqa: F401  # graphs are read with it (their weights filled from the bundle's file)
        import onnxruntime
    except ImportError:
        raise OnnxUnavailable("the onnxruntime package is not installed (pip install 'variorum[onnx]', "
                              "or 'variorum[onnx-gpu]' on a GPU machine)") from None
    return onnxruntime


def read_record(bundle_dir: Path, kind: str) -> dict[str, Any]:
    """The bundle's export record, checked (`OnnxUnavailable` saying why it cannot be used)."""
    path = bundle_dir / ONNX_DIR / EXPORT_FILE
    if not path.exists():
        raise OnnxUnavailable(f"{bundle_dir} has no ONNX export (run `variorum export-onnx --bundle {bundle_dir}`)")
    try:
        record = read_small_json(path)
    except UnusableFileError as error:
        raise OnnxUnavailable(f"{error}; re-run `variorum export-onnx`") from None
    problem = record_problem(record, kind)
    if problem:
        raise OnnxUnavailable(f"{path} {problem}; re-run `variorum export-onnx`")
    if record.get("weights_sha256") != file_sha256(bundle_dir / WEIGHTS_FILE):
        raise OnnxUnavailable(f"the ONNX export in {bundle_dir / ONNX_DIR} was made from other weights than the "
                              "bundle's (retrained since?); re-run `variorum export-onnx`")
    return dict(record)


def record_problem(record: Any, kind: str) -> str | None:
    """What makes `record` unusable as a `kind` export record, worded to follow its path, or None.

    Every graph it names must be a plain file name: the graphs are opened from the bundle's onnx folder,
    and a name with `..` or an absolute path would load a graph from anywhere."""
    if not isinstance(record, dict) or record.get("format") not in READABLE_FORMATS or record.get("kind") != kind:
        return f"is not a {kind!r} export of a format this version reads {READABLE_FORMATS}"
    if not all(isinstance(record.get(key), int) and record[key] > 0 for key in ("layers", "heads", "head_dim")):
        return "does not give the graphs' layers, heads and head_dim"
    graphs, int8 = record.get("graphs"), record.get("int8", {})
    if not isinstance(graphs, dict) or not all(map(_is_graph_entry, graphs.values())) or not isinstance(
            graphs.get("decoder", {}).get("inputs"), dict):
        return "does not name its graphs as {role: {file, sha256, inputs}} with a decoder"
    if not isinstance(int8, dict) or (int8 and not (_is_graph_entry(int8) and isinstance(int8.get("offered"), bool)
                                                    and _is_number(int8.get("change_percent")))):
        return "has a malformed int8 section"
    names = [g["file"] for g in graphs.values()] + ([int8["file"]] if int8 else [])
    outside = [name for name in names if not _is_plain_name(name)]
    return f"names a graph outside the bundle's onnx folder ({outside[0]!r})" if outside else None


def _is_graph_entry(entry: Any) -> bool:
    return isinstance(entry, dict) and isinstance(entry.get("file"), str) and isinstance(entry.get("sha256"), str)


def _is_plain_name(name: str) -> bool:
    return name not in ("", ".", "..") and PurePosixPath(name).name == name and PureWindowsPath(name).name == name


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


Provider = str | tuple[str, dict[str, str]]  # a name, or a name with its options


def providers_for(device: torch.device, available: list[str]) -> list[Provider]:
    """The CUDA execution provider for a model on a GPU, the CPU provider otherwise; `OnnxUnavailable`
    for a GPU model when the installed onnxruntime has no CUDA provider (the CPU package): its
    sessions could not read the GPU tensors the decoder binds.

    The CUDA provider runs on the model's GPU and without TF32: ONNX Runtime rounds fp32 products
    to TF32 by default on Ampere and newer GPUs, torch does not, and the two runtimes must give the
    same tokens for the same seed."""
    if device.type != "cuda":
        return ["CPUExecutionProvider"]
    if "CUDAExecutionProvider" not in available:
        raise OnnxUnavailable("the model is on the GPU but the installed onnxruntime has no CUDA execution provider "
                              "(pip install 'variorum[onnx-gpu]' instead of 'variorum[onnx]')")
    options = {"device_id": str(device.index or 0), "use_tf32": "0"}
    return [("CUDAExecutionProvider", options), "CPUExecutionProvider"]


def _session(ort: Any, path: Path, sha256: str, device: torch.device, weights: bytes) -> Any:
    if not path.is_file():
        raise OnnxUnavailable(f"{path} is missing; re-run `variorum export-onnx`")
    if file_sha256(path) != sha256:
        raise OnnxUnavailable(f"{path} is damaged or was replaced (its checksum is not the export's); "
                              "re-run `variorum export-onnx`")
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    # One thread, no spinning: a decoder step of a small model is too little work to split across
    # cores, and spinning idle workers steal the cores torch needs for the head and the sampler between
    # steps (engine.benchmarks.generation --runtime onnx, docs/onnx-runtime.md).
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3  # errors only: ONNX Runtime's own warnings would print on every load
    try:
        graph = load_graph(path, weights).SerializeToString()  # weights filled from the bundle's file
        return ort.InferenceSession(graph, options, providers=providers_for(device, ort.get_available_providers()))
    except Exception as error:  # onnx's DecodeError, onnxruntime's own Fail / InvalidGraph / … types
        raise OnnxUnavailable(f"ONNX Runtime cannot load {path} ({str(error).splitlines()[0][:160]})") from None


def open_graphs(bundle_dir: Path, kind: str, device: torch.device, decoder_file: str | None = None,
                decoder_sha256: str = "") -> OpenGraphs:
    """Sessions for every graph of the bundle's export; `decoder_file` (with its sha256) replaces the
    recorded decoder, e.g. the int8 one."""
    ort = _import_onnxruntime()
    bundle_dir = Path(bundle_dir)
    record = read_record(bundle_dir, kind)
    sessions, weights = {}, (bundle_dir / WEIGHTS_FILE).read_bytes()
    for role, graph in record["graphs"].items():
        file, sha256 = graph["file"], graph["sha256"]
        if role == "decoder" and decoder_file is not None:
            file, sha256 = decoder_file, decoder_sha256
        sessions[role] = _session(ort, bundle_dir / ONNX_DIR / file, sha256, device, weights)
    return OpenGraphs(sessions, record, device)
