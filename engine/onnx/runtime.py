"""The runtime choice `auto | torch | onnx | onnx-int8`, resolved for one loaded bundle.

- `torch`: the torch backbone (no runner; the decoder uses the model itself);
- `onnx`: the exported fp32 decoder step on ONNX Runtime (CUDA provider on a GPU, CPU otherwise);
- `onnx-int8`: the int8 decoder on the CPU, where the export offers it (engine/onnx/quantize.py);
- `auto`: `onnx` when the bundle has an export and onnxruntime is installed, else `torch`.

Whenever ONNX was asked for (or `auto` found an export) but cannot be used — package missing,
export stale or damaged — the choice falls back to torch (int8 not offered: to fp32 ONNX) and
`RuntimeChoice.note` holds one line saying why, for the CLI and the app to show.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

import torch

from engine.onnx import RUNTIMES
from engine.onnx.runner import OnnxBackboneRunner
from engine.onnx.session import OnnxUnavailable, exported, open_graphs, read_record


@dataclass
class RuntimeChoice:
    """The resolved runtime: `runner` None means torch; `note` is the fallback warning, or ''."""

    name: str  # "torch", or "onnx (CPUExecutionProvider)", …
    runner: OnnxBackboneRunner | None = None
    note: str = ""


def check_runtime(runtime: str) -> None:
    if runtime not in RUNTIMES:
        raise ValueError(f"runtime must be one of {list(RUNTIMES)}, got {runtime!r}")


def onnxruntime_installed() -> bool:
    return importlib.util.find_spec("onnxruntime") is not None


def choose_lm_runtime(bundle_dir: Path, block_size: int, n_embd: int, runtime: str,
                      device: torch.device) -> RuntimeChoice:
    """Resolve `runtime` for a language-model bundle (see the module docstring)."""
    check_runtime(runtime)
    if runtime == "torch" or (runtime == "auto" and not (exported(bundle_dir) and onnxruntime_installed())):
        return RuntimeChoice("torch")
    note, decoder_file, sha256 = "", None, ""
    if runtime == "onnx-int8":
        decoder_file, sha256, note = _int8_decoder(bundle_dir, device)
    try:
        graphs = open_graphs(bundle_dir, "lm", device, decoder_file, sha256)
    except OnnxUnavailable as error:
        return RuntimeChoice("torch", note=f"ONNX Runtime not used, decoding with torch: {error}")
    runner = OnnxBackboneRunner(graphs, block_size, n_embd)
    return RuntimeChoice(runner.name + (" int8" if decoder_file else ""), runner, note)


def _int8_decoder(bundle_dir: Path, device: torch.device) -> tuple[str | None, str, str]:
    """(int8 decoder file, its sha256, '') when the export offers it here, else (None, '', why fp32 is used)."""
    if device.type == "cuda":
        return None, "", "int8 decoding is for the CPU; using the fp32 ONNX decoder on the GPU"
    try:
        int8 = read_record(bundle_dir, "lm").get("int8", {})
    except OnnxUnavailable:
        return None, "", ""  # open_graphs reports the export's problem
    if not int8:
        return None, "", "no int8 decoder was exported (export-onnx --int8 FILES); using the fp32 ONNX decoder"
    if not int8.get("offered"):
        return None, "", (f"the int8 decoder is not offered (held-out perplexity {int8['change_percent']:+}%, "
                          "more than 2%); using the fp32 ONNX decoder")
    return str(int8["file"]), str(int8["sha256"]), ""

