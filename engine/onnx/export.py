"""`variorum export-onnx --bundle B`: write B's decoder step (and a PermGen bundle's encoder) as ONNX next to it.

The bundle's family (engine/families `onnx_graphs`) says which graphs it has, built here: a language
model's decoder step (`lm_step_graphs`, traced from its GPT-2 or Llama backbone's step module) or a
BART encoder and decoder step (`bart_graphs`, PermGen). Files go to `<bundle>/onnx/`, one per graph
role: `decoder.onnx` and, for an encoder-decoder, `encoder.onnx`; with `--int8 FILES` also
`decoder.int8.onnx` when it keeps held-out perplexity within 2% (engine/onnx/quantize.py); and
`export.json`, the record the runtime checks before it uses them: the opset, every input and output
with its dimension names, the sha256 of the bundle's weights file (a retrained bundle makes the
export stale: the runtime says so and falls back to torch) and of each graph file (a damaged file is
caught before ONNX Runtime reads it). The graphs' weights refer to the bundle's weights file rather
than copy it (engine/onnx/shared_weights.py). The bundle's card gets an "ONNX export" section with
the same facts. Graphs are traced from the modules of `engine.onnx.graphs`, `llama_graphs` and
`seq2seq_graphs` with the classic exporter, every batch / length axis dynamic.
"""

from __future__ import annotations

import argparse
import json
import re
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from engine.bundles.bundle import CARD_FILE, WEIGHTS_FILE, bundle_family
from engine.cli_errors import reports_user_errors
from engine.families import OnnxGraph, OnnxGraphs
from engine.onnx import EXPORT_FILE, ONNX_DIR
from engine.onnx.export_format import EXPORT_FORMAT, cache_names, file_sha256

if TYPE_CHECKING:  # the backbones (and transformers) load only when a graph is built
    from engine.backbones.bart import BartBackbone
    from engine.config import ModelConfig

OPSET = 17  # LayerNormalization is a native op from 17; ONNX Runtime ≥ 1.15 runs it everywhere
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

    kind: str  # the bundle's kind (engine/families): the runtime opens only an export of its bundle's kind
    opset: int
    weights_sha256: str
    layers: int
    heads: int  # the cache's: key/value heads (a Llama's n_kv_head), which size the runner's empty cache
    head_dim: int
    graphs: dict[str, GraphRecord]
    int8: dict[str, Any] = field(default_factory=dict)  # the int8 perplexity check (engine/onnx/quantize.py)
    format: int = EXPORT_FORMAT
    torch_version: str = torch.__version__

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1)


def _trace(module: nn.Module, args: tuple[torch.Tensor, ...], path: Path, inputs: dict[str, list[str | int]],
           outputs: dict[str, list[str | int]]) -> GraphRecord:
    """Export `module(*args)` to `path` with the named, dynamically sized inputs and outputs; its weights
    refer to the bundle's weights file, two folders up (engine/onnx/shared_weights.py)."""
    dynamic = {name: {i: d for i, d in enumerate(dims) if isinstance(d, str)} for name, dims in {**inputs,
                                                                                                  **outputs}.items()}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the classic tracer's deprecation and tracer warnings (shapes are traced)
        torch.onnx.export(module, args, str(path), input_names=list(inputs), output_names=list(outputs),
                          dynamic_axes=dynamic, opset_version=OPSET, dynamo=False, do_constant_folding=True)
    import onnx

    from engine.onnx.shared_weights import share_bundle_weights

    graph = onnx.load(str(path))
    store_exact_halves(graph)
    share_bundle_weights(graph, path.parent.parent / WEIGHTS_FILE)
    onnx.save(graph, str(path))
    kept = {tensor.name for tensor in graph.graph.input}  # the exporter drops inputs never read
    return GraphRecord(path.name, file_sha256(path), {k: v for k, v in inputs.items() if k in kept}, outputs)


def store_exact_halves(model: Any) -> int:
    """Store every large fp32 weight of the onnx `model` whose values are all exact in bf16 or fp16 in
    that 16-bit type, cast back to fp32 inside the graph → how many were stored so.

    A bundle saved with 16-bit weights (training config `bundle_dtype`) holds only such values, so
    its graphs shrink by half and compute exactly what they did: ONNX Runtime folds each Cast into
    an fp32 weight when it loads the graph. Weights of an fp32 bundle are not exact and stay fp32."""
    from onnx import TensorProto, helper

    graph, stored = model.graph, 0
    for index in range(len(graph.initializer)):
        name = graph.initializer[index].name
        half = _exact_half(graph.initializer[index], f"{name}.half")
        if half is None:
            continue
        graph.initializer[index].CopyFrom(half)
        graph.node.insert(0, helper.make_node("Cast", [half.name], [name], to=TensorProto.FLOAT))
        stored += 1
    return stored


def restore_full_weights(model: Any) -> int:
    """Undo `store_exact_halves` on the onnx `model`: every 16-bit weight cast to fp32 becomes an fp32
    weight again → how many. Graph tools that look for weights as initializers (ONNX Runtime's
    int8 quantizer skips a MatMul whose weight comes out of a Cast) need them so."""
    import numpy as np
    from onnx import TensorProto, numpy_helper

    graph = model.graph
    halves = {t.name: t for t in graph.initializer if t.data_type in (TensorProto.BFLOAT16, TensorProto.FLOAT16)}
    casts = [n for n in graph.node if n.op_type == "Cast" and len(n.input) == 1 and n.input[0] in halves]
    for cast in casts:
        half = halves[cast.input[0]]
        if half.data_type == TensorProto.BFLOAT16:  # bf16 is the top half of an fp32
            bits = np.frombuffer(half.raw_data, dtype=np.uint16).astype(np.uint32) << 16
            values = bits.view(np.float32).reshape(tuple(half.dims))
        else:
            values = numpy_helper.to_array(half).astype(np.float32)
        graph.initializer.remove(half)
        graph.initializer.append(numpy_helper.from_array(values, cast.output[0]))
        graph.node.remove(cast)
    return len(casts)


def _exact_half(weight: Any, name: str) -> Any:
    """`weight` (an onnx TensorProto) as a bf16 or fp16 tensor named `name` when that is exact, else None."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    if weight.data_type != TensorProto.FLOAT:
        return None
    values = numpy_helper.to_array(weight)
    if values.size < 1024:  # biases and norms: too small to matter
        return None
    bits = values.view(np.uint32)
    if not (bits & 0xFFFF).any():  # bf16 is the top half of an fp32
        return helper.make_tensor(name, TensorProto.BFLOAT16, values.shape, (bits >> 16).astype(np.uint16).tobytes(),
                                  raw=True)
    if np.array_equal(values.astype(np.float16).astype(np.float32), values):
        return numpy_helper.from_array(values.astype(np.float16), name)
    return None


def _cache_dims(prefix: str, layers: int, heads: int, head_dim: int, length: str) -> dict[str, list[str | int]]:
    return {name: ["batch", heads, length, head_dim] for name in cache_names(prefix, layers)}


def _empty_past(layers: int, rows: int, heads: int, length: int, head_dim: int) -> tuple[torch.Tensor, ...]:
    return tuple(torch.zeros(rows, heads, length, head_dim) for _ in range(2 * layers))


def lm_step_graphs(step: nn.Module, config: ModelConfig, cache_heads: int) -> OnnxGraphs:
    """A language model's decoder step (`decoder.onnx`); `step` is its backbone's step module (`GPT2StepGraph` of
    engine/onnx/graphs.py, `LlamaStepGraph` of engine/onnx/llama_graphs.py), whose cache holds `cache_heads`
    heads (GPT-2's n_head; a Llama's n_kv_head key/value heads)."""
    layers, heads, head_dim = config.n_layer, cache_heads, config.n_embd // config.n_head
    ids = torch.randint(0, config.vocab_size, (2, 3))  # [N, T]; traced with a non-empty past so S stays symbolic
    decoder = OnnxGraph(
        "decoder", step.eval(), (ids, *_empty_past(layers, 2, heads, 4, head_dim)),
        {"input_ids": ["batch", "new"], **_cache_dims("past", layers, heads, head_dim, "past")},
        {"hidden": ["batch", "new", config.n_embd], **_cache_dims("present", layers, heads, head_dim, "total")},
    )
    return OnnxGraphs((decoder,), layers, heads, head_dim)


def bart_graphs(backbone: BartBackbone, config: ModelConfig) -> OnnxGraphs:
    """A BART backbone's encoder (`encoder.onnx`) and decoder step (`decoder.onnx`): PermGen's graphs;
    `config` is the decoder's."""
    from engine.onnx.seq2seq_graphs import BartEncoderGraph, BartStepGraph

    layers, heads, head_dim = config.n_layer, config.n_head, config.n_embd // config.n_head
    cross = _cache_dims("cross", layers, heads, head_dim, "source")
    for dims in cross.values():
        dims[0] = 1  # one source per request, broadcast to the decoder's rows
    source = torch.randint(0, config.vocab_size, (1, 5))  # [1, S]
    encoder = OnnxGraph("encoder", BartEncoderGraph(backbone).eval(), (source,), {"source_ids": [1, "source"]},
                        cross)
    ids = torch.randint(0, config.vocab_size, (2, 3))  # [N, T]; traced with a non-empty past so P stays symbolic
    positions = torch.ones_like(ids)  # sentence 1, local 1: inside every table
    empty_cross = tuple(torch.zeros(1, heads, 5, head_dim) for _ in range(2 * layers))
    new: list[str | int] = ["batch", "new"]
    decoder = OnnxGraph(  # a plain-BART bundle's graph has no (sentence, local) inputs: it never reads them
        "decoder", BartStepGraph(backbone).eval(),
        (ids, positions, positions, *empty_cross, *_empty_past(layers, 2, heads, 4, head_dim)),
        {"input_ids": new, "sentence": new, "local": new, **cross, **_cache_dims("past", layers, heads, head_dim,
                                                                                  "past")},
        {"hidden": ["batch", "new", config.n_embd], **_cache_dims("present", layers, heads, head_dim, "total")},
    )
    return OnnxGraphs((encoder, decoder), layers, heads, head_dim)


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
    """Export the graphs of the bundle's family to `<bundle>/onnx/`, write export.json and the card section."""
    bundle_dir = Path(bundle_dir)
    family = bundle_family(bundle_dir)
    out = bundle_dir / ONNX_DIR
    out.mkdir(exist_ok=True)
    (out / EXPORT_FILE).unlink(missing_ok=True)  # no record while the graphs are rewritten: a crash leaves none
    graphs = family.onnx_graphs(bundle_dir)
    traced = {graph.role: _trace(graph.module, graph.example, out / f"{graph.role}.onnx", graph.inputs,
                                 graph.outputs) for graph in graphs.graphs}
    record = ExportRecord(family.kind, OPSET, file_sha256(bundle_dir / WEIGHTS_FILE), graphs.layers, graphs.heads,
                          graphs.head_dim, traced)
    (out / EXPORT_FILE).write_text(record.to_json())  # the int8 check opens the fp32 graph through it
    if int8_files:
        from engine.onnx.quantize import quantize_checked

        record.int8 = quantize_checked(bundle_dir, family.onnx_perplexity(bundle_dir, int8_files))
    (out / EXPORT_FILE).write_text(record.to_json())
    card = bundle_dir / CARD_FILE
    card.write_text(update_card(card.read_text(errors="replace"), card_section(record)))
    return record


@reports_user_errors("export-onnx")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="variorum export-onnx", description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", type=Path, required=True, help="bundle directory (language model or PermGen)")
    parser.add_argument("--int8", type=Path, nargs="+", metavar="FILE",
                        help="also write an int8 decoder for the CPU, offered only if the held-out perplexity on "
                        "these files (the bundle's validation split, as `variorum perplexity` measures it) rises "
                        "at most 2%%")
    args = parser.parse_args(argv)
    record = export_bundle(args.bundle, args.int8)
    for name, graph in record.graphs.items():
        print(f"{name}: {args.bundle / ONNX_DIR / graph.file} (opset {record.opset})")
    if record.int8:
        print(f"int8: {'offered' if record.int8['offered'] else 'not offered'}, held-out perplexity "
              f"{record.int8['fp32_perplexity']} fp32 → {record.int8['int8_perplexity']} int8 "
              f"({record.int8['change_percent']:+}%)")
    return 0
