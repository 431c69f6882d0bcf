"""The runtime choice `auto | torch | onnx | onnx-int8`, resolved for one loaded bundle.

- `torch`: the torch backbone (no runner; the decoder uses the model itself);
- `onnx`: the exported fp32 graphs on ONNX Runtime (CUDA provider on a GPU, CPU otherwise): a
  language model's decoder step, or a PermGen bundle's encoder and decoder step;
- `onnx-int8`: the int8 decoder on the CPU, where the export offers it (engine/onnx/quantize.py);
- `auto`: `onnx` when the bundle has an export and onnxruntime is installed, else `torch`; a language
  model on a CPU then decodes on the export only where it measures faster than torch for the batch
  (engine/decoding/runtime_choice.py).

Whenever ONNX was asked for (or `auto` found an export) but cannot be used — package missing,
export stale or damaged, or a first tiny step that fails (a graph of other shapes, an execution
provider without a kernel for one of its nodes) — the choice falls back to torch (int8 not
offered: to fp32 ONNX) and `RuntimeChoice.note` holds one line saying why, for the CLI and the
app to show.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, Protocol, TypeVar

import torch

from engine.onnx import RUNTIMES
from engine.onnx.session import OnnxUnavailable, OpenGraphs, exported, open_graphs, read_record


class OnnxRunner(Protocol):
    """What the choice needs of a family's ONNX runner: its name, and a first tiny step that raises when
    the exported graphs cannot run here."""

    @property
    def name(self) -> str: ...

    def check(self) -> None: ...


Runner = TypeVar("Runner", bound=OnnxRunner)


@dataclass
class RuntimeChoice(Generic[Runner]):
    """The resolved runtime: `runner` None means torch; `note` is the fallback warning, or ''."""

    name: str  # "torch", or "onnx (CPUExecutionProvider)", …
    runner: Runner | None = None
    note: str = ""


def check_runtime(runtime: str) -> None:
    if runtime not in RUNTIMES:
        raise ValueError(f"runtime must be one of {list(RUNTIMES)}, got {runtime!r}")


def onnxruntime_installed() -> bool:
    return importlib.util.find_spec("onnxruntime") is not None


def choose_runtime(bundle_dir: Path, kind: str, runtime: str, device: torch.device,
                   make_runner: Callable[[OpenGraphs], Runner]) -> RuntimeChoice[Runner]:
    """`runtime` resolved for a bundle of the family `kind` (see the module docstring); `make_runner` wraps
    its open graphs in the family's runner (engine/lm/loaded.py `choose_lm_runtime`, engine/permgen/loaded.py)."""
    check_runtime(runtime)
    if runtime == "torch" or (runtime == "auto" and not (exported(bundle_dir) and onnxruntime_installed())):
        return RuntimeChoice("torch")
    note, decoder_file, sha256 = "", None, ""
    if runtime == "onnx-int8":
        decoder_file, sha256, note = _int8_decoder(bundle_dir, kind, device)
    try:
        graphs = open_graphs(bundle_dir, kind, device, decoder_file, sha256)
    except OnnxUnavailable as error:
        return RuntimeChoice("torch", note=f"ONNX Runtime not used, decoding with torch: {error}")
    runner = make_runner(graphs)
    try:  # a graph can load and still fail on its first step (a provider lacking a kernel, foreign shapes)
        runner.check()
    except Exception as error:  # onnxruntime raises its own Fail / InvalidArgument / … types
        reason = str(error).splitlines()[0][:200] if str(error) else type(error).__name__
        return RuntimeChoice("torch", note=f"ONNX Runtime not used, decoding with torch: the exported graph "
                                           f"failed its first step on {runner.name} ({reason})")
    return RuntimeChoice(runner.name + (" int8" if decoder_file else ""), runner, note)


def _int8_decoder(bundle_dir: Path, kind: str, device: torch.device) -> tuple[str | None, str, str]:
    """(int8 decoder file, its sha256, '') when the export offers it here, else (None, '', why fp32 is used)."""
    if device.type == "cuda":
        return None, "", "int8 decoding is for the CPU; using the fp32 ONNX decoder on the GPU"
    try:
        int8 = read_record(bundle_dir, kind).get("int8", {})
    except OnnxUnavailable:
        return None, "", ""  # open_graphs reports the export's problem
    if not int8:
        return None, "", "no int8 decoder was exported (export-onnx --int8 FILES); using the fp32 ONNX decoder"
    if not int8.get("offered"):
        return None, "", (f"the int8 decoder is not offered (held-out perplexity {int8['change_percent']:+}%, "
                          "more than 2%); using the fp32 ONNX decoder")
    return str(int8["file"]), str(int8["sha256"]), ""

