"""The runtime choice `auto | torch | onnx`, resolved for one loaded bundle.

- `torch`: the torch backbone (no runner; the decoder uses the model itself);
- `onnx`: the exported fp32 decoder step on ONNX Runtime (CUDA provider on a GPU, CPU otherwise);
- `auto`: `onnx` when the bundle has an export and onnxruntime is installed, else `torch`.

Whenever ONNX was asked for (or `auto` found an export) but cannot be used — package missing,
export stale or damaged — the choice falls back to torch and `RuntimeChoice.note` holds one line
saying why, for the CLI and the app to show.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

import torch

from engine.onnx import RUNTIMES
from engine.onnx.runner import OnnxBackboneRunner
from engine.onnx.session import OnnxUnavailable, exported, open_graphs


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
    try:
        graphs = open_graphs(bundle_dir, "lm", device)
    except OnnxUnavailable as error:
        return RuntimeChoice("torch", note=f"ONNX Runtime not used, decoding with torch: {error}")
    runner = OnnxBackboneRunner(graphs, block_size, n_embd)
    return RuntimeChoice(runner.name, runner)

