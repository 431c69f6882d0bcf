"""int8 for the CPU: ONNX Runtime's dynamic quantization of the decoder, offered only if it keeps quality.

`quantize_checked` writes `decoder.int8.onnx` (weights of every MatMul as int8, activations
quantized on the fly) and measures held-out perplexity — the documents and blocks `variorum
perplexity` uses (the bundle's validation split of the given files) — once through the fp32
decoder and once through the int8 one, with the torch head on top of each. The int8 decoder is
offered (`--runtime onnx-int8`) only when its perplexity is at most 2% above the fp32 decoder's;
otherwise its file is removed. The numbers go into export.json and the card either way.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import torch

from engine.bundle import load_bundle
from engine.data.blocks import make_blocks
from engine.data.corpus import read_corpus, split_documents
from engine.evaluate import block_perplexity
from engine.onnx import ONNX_DIR
from engine.onnx.runner import OnnxBackboneRunner
from engine.onnx.session import open_graphs

INT8_FILE = "decoder.int8.onnx"
MAX_PERPLEXITY_RISE = 0.02  # the int8 decoder is offered while perplexity stays within 2% of fp32


def quantize_checked(bundle_dir: Path, files: list[Path], valid_fraction: float | None = None) -> dict[str, Any]:
    """Write the int8 decoder and the perplexity check (see the module docstring) → export.json's `int8`."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from engine.onnx.export import file_sha256

    bundle = load_bundle(bundle_dir)
    fraction = valid_fraction if valid_fraction is not None else float(
        bundle.provenance.get("train", {}).get("valid_fraction", 0.05))
    held_out = split_documents(read_corpus(files), fraction)[1]
    config = bundle.model.config
    blocks = make_blocks(bundle.tokenizer.encode_batch(held_out), bundle.tokenizer.eos_id, config.block_size)
    out = bundle_dir / ONNX_DIR
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)  # the quantizer's "consider pre-processing" advice is for image models
    try:
        quantize_dynamic(out / "decoder.onnx", out / INT8_FILE, weight_type=QuantType.QInt8)
    finally:
        root.setLevel(level)
    cpu = torch.device("cpu")
    perplexities = []
    for graph in (None, INT8_FILE):
        graphs = open_graphs(bundle_dir, "lm", cpu, graph, file_sha256(out / INT8_FILE))
        runner = OnnxBackboneRunner(graphs, config.block_size, config.n_embd)
        perplexities.append(block_perplexity(bundle.model, blocks, runner=runner)[1])
    fp32, int8 = perplexities
    offered = int8 <= fp32 * (1 + MAX_PERPLEXITY_RISE)
    if not offered:
        (out / INT8_FILE).unlink()
    return {"file": INT8_FILE, "sha256": file_sha256(out / INT8_FILE) if offered else "", "offered": offered,
            "fp32_perplexity": round(fp32, 4), "int8_perplexity": round(int8, 4),
            "change_percent": round(100 * (int8 / fp32 - 1), 3), "documents": len(held_out),
            "tokens": int(blocks[:, 1:].numel())}
