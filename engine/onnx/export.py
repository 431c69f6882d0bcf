"""`variorum export-onnx --bundle B`: write B's decoder step as ONNX next to it.

Files go to `<bundle>/onnx/`: `decoder.onnx`; with `--int8 FILES` also `decoder.int8.onnx` when
it keeps held-out perplexity within 2% (engine/onnx/quantize.py); and `export.json`, the record
the runtime checks before it uses them: the opset, every input and output with its dimension
names, the sha256 of the bundle's weights file (a retrained bundle makes the export stale: the
runtime says so and falls back to torch) and of each graph file (a damaged file is caught before
ONNX Runtime reads it). The bundle's card gets an "ONNX export" section with the same facts.
Graphs are traced from the modules of `engine.onnx.graphs` with the classic exporter, every
batch / length axis dynamic.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from engine.bundle import CARD_FILE, WEIGHTS_FILE, BundleError, load_bundle
from engine.cli_errors import reports_user_errors
from engine.onnx import EXPORT_FILE, ONNX_DIR
from engine.onnx.graphs import GPT2StepGraph

OPSET = 17  # LayerNormalization is a native op from 17; ONNX Runtime ≥ 1.15 runs it everywhere
EXPORT_FORMAT = 1
CARD_SECTION = "## ONNX export"


@dataclass
class GraphRecord:
    """One exported graph: its file, sha256 and named inputs / outputs with their dimensions."""

    file: str
    sha256: str
    inputs: dict[str, list[str | int]]
    outputs: dict[str, list[str | int]]


@dataclass
class ExportRecord:
    """What `export.json` holds; the runtime refuses an export whose record does not fit the bundle."""

    kind: str  # "lm": a language model's decoder step
    opset: int
    weights_sha256: str
    layers: int
    heads: int
    head_dim: int
    graphs: dict[str, GraphRecord]
    int8: dict[str, Any] = field(default_factory=dict)  # the int8 perplexity check (engine/onnx/quantize.py)
    format: int = EXPORT_FORMAT
    torch_version: str = torch.__version__

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def cache_names(prefix: str, layers: int) -> list[str]:
    """Graph names of the cache tensors: `past_keys_0, past_values_0, past_keys_1, …` (prefix "past"/"present")."""
    return [f"{prefix}_{kind}_{layer}" for layer in range(layers) for kind in ("keys", "values")]


def _trace(module: nn.Module, args: tuple[torch.Tensor, ...], path: Path, inputs: dict[str, list[str | int]],
           outputs: dict[str, list[str | int]]) -> GraphRecord:
    """Export `module(*args)` to `path` with the named, dynamically sized inputs and outputs."""
    dynamic = {name: {i: d for i, d in enumerate(dims) if isinstance(d, str)} for name, dims in {**inputs,
                                                                                                  **outputs}.items()}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the classic tracer's deprecation and tracer warnings (shapes are traced)
        torch.onnx.export(module, args, str(path), input_names=list(inputs), output_names=list(outputs),
                          dynamic_axes=dynamic, opset_version=OPSET, dynamo=False, do_constant_folding=True)
    return GraphRecord(path.name, file_sha256(path), inputs, outputs)


def _cache_dims(prefix: str, layers: int, heads: int, head_dim: int, length: str) -> dict[str, list[str | int]]:
    return {name: ["batch", heads, length, head_dim] for name in cache_names(prefix, layers)}


def _empty_past(layers: int, rows: int, heads: int, length: int, head_dim: int) -> tuple[torch.Tensor, ...]:
    return tuple(torch.zeros(rows, heads, length, head_dim) for _ in range(2 * layers))


def export_lm(bundle_dir: Path, out: Path) -> ExportRecord:
    """The GPT-2 decoder step of a language-model bundle → `out/decoder.onnx`."""
    bundle = load_bundle(bundle_dir, "cpu")
    config = bundle.model.config
    layers, heads, head_dim = config.n_layer, config.n_head, config.n_embd // config.n_head
    graph = GPT2StepGraph(bundle.model.backbone).eval()
    ids = torch.randint(0, config.vocab_size, (2, 3))  # [N, T]; traced with a non-empty past so S stays symbolic
    record = _trace(
        graph, (ids, *_empty_past(layers, 2, heads, 4, head_dim)), out / "decoder.onnx",
        {"input_ids": ["batch", "new"], **_cache_dims("past", layers, heads, head_dim, "past")},
        {"hidden": ["batch", "new", config.n_embd], **_cache_dims("present", layers, heads, head_dim, "total")},
    )
    return ExportRecord("lm", OPSET, file_sha256(bundle_dir / WEIGHTS_FILE), layers, heads, head_dim,
                        {"decoder": record})


def card_section(record: ExportRecord) -> str:
    """The card's "ONNX export" section: opset and the graphs with their shapes."""
    lines = [CARD_SECTION, "", f"Exported with `variorum export-onnx` (opset {record.opset}, torch "
             f"{record.torch_version}) to `{ONNX_DIR}/`; `--runtime onnx` or `auto` runs it with ONNX Runtime.", ""]
    for name, graph in record.graphs.items():
        lines.append(f"- {name} (`{graph.file}`): in {_describe(graph.inputs)}; out {_describe(graph.outputs)}")
    if record.int8:
        verdict = "offered (`--runtime onnx-int8`)" if record.int8["offered"] else "not offered (more than 2%)"
        lines.append(f"- int8 dynamic quantization: held-out perplexity {record.int8['fp32_perplexity']} fp32, "
                     f"{record.int8['int8_perplexity']} int8 ({record.int8['change_percent']:+}%): {verdict}")
    return "\n".join(lines) + "\n"


def _describe(tensors: dict[str, list[str | int]]) -> str:
    """"input_ids [batch, new]; past_keys_l / past_values_l [batch, 4, past, 16] for l < 2" (one cache line)."""
    parts, layers = [], 0
    for name, dims in tensors.items():
        prefix, _, layer = name.rpartition("_")
        if prefix.endswith(("_keys", "_values")) and layer.isdigit():
            layers = max(layers, int(layer) + 1)
            if layer != "0" or prefix.endswith("_values"):
                continue
            kind = prefix.removesuffix("_keys")
            parts.append(f"{kind}_keys_l / {kind}_values_l [{', '.join(map(str, dims))}]")
            continue
        parts.append(f"{name} [{', '.join(map(str, dims))}]")
    return "; ".join(parts) + (f" for l < {layers}" if layers else "")


def update_card(card: str, section: str) -> str:
    """`card` with its ONNX section replaced by `section` (appended when it has none)."""
    pattern = re.compile(rf"^{re.escape(CARD_SECTION)}\n.*?(?=^## |\Z)", re.MULTILINE | re.DOTALL)
    if pattern.search(card):
        return pattern.sub(lambda _: section + "\n", card, count=1).rstrip("\n") + "\n"
    return card.rstrip("\n") + "\n\n" + section


def export_bundle(bundle_dir: Path, int8_files: list[Path] | None = None) -> ExportRecord:
    """Export the bundle's graphs to `<bundle>/onnx/`, write export.json and the card section."""
    from engine.permgen.bundle import is_permgen_bundle

    bundle_dir = Path(bundle_dir)
    if not bundle_dir.is_dir():
        raise BundleError(f"bundle {bundle_dir} does not exist or is not a directory")
    if is_permgen_bundle(bundle_dir):
        raise BundleError(f"bundle {bundle_dir} is a PermGen bundle; export-onnx writes language-model bundles only")
    out = bundle_dir / ONNX_DIR
    out.mkdir(exist_ok=True)
    (out / EXPORT_FILE).unlink(missing_ok=True)  # no record while the graphs are rewritten: a crash leaves none
    record = export_lm(bundle_dir, out)
    (out / EXPORT_FILE).write_text(record.to_json())  # the int8 check opens the fp32 graph through it
    if int8_files:
        from engine.onnx.quantize import quantize_checked

        record.int8 = quantize_checked(bundle_dir, int8_files)
    (out / EXPORT_FILE).write_text(record.to_json())
    card = bundle_dir / CARD_FILE
    card.write_text(update_card(card.read_text(errors="replace"), card_section(record)))
    return record


@reports_user_errors("export-onnx")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="variorum export-onnx", description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", type=Path, required=True, help="language-model bundle directory")
    parser.add_argument("--int8", type=Path, nargs="+", metavar="FILE",
                        help="also write an int8 decoder for the CPU, offered only if the held-out perplexity on "
                        "these files (the bundle's validation split, as `variorum perplexity`) rises at most 2%%")
    args = parser.parse_args(argv)
    record = export_bundle(args.bundle, args.int8)
    for name, graph in record.graphs.items():
        print(f"{name}: {args.bundle / ONNX_DIR / graph.file} (opset {record.opset})")
    if record.int8:
        print(f"int8: {'offered' if record.int8['offered'] else 'not offered'}, held-out perplexity "
              f"{record.int8['fp32_perplexity']} fp32 → {record.int8['int8_perplexity']} int8 "
              f"({record.int8['change_percent']:+}%)")
    return 0
