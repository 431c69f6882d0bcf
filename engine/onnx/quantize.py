"""int8 for the CPU: ONNX Runtime's dynamic quantization of the decoder, offered only if it keeps quality.

`quantize_checked` writes `decoder.int8.onnx` (weights of every MatMul as int8, activations
quantized on the fly; embeddings stay as they are) and measures held-out perplexity once through
the fp32 decoder and once through the int8 one, with the torch head on top of each, as the bundle's
family measures it (engine/families `onnx_perplexity`):

- a language model: the documents and blocks `variorum perplexity` uses (the bundle's
  validation split of the given files);
- a PermGen bundle: its targets in natural order given their sources, on the hash split of the
  given files that its training held out (`ppl_natural` of `variorum perplexity --bundle B
  --files FILES`). Only the decoder step is quantized: the encoder runs once per request.

The int8 decoder is offered (`--runtime onnx-int8`) only when its perplexity is at most 2% above
the fp32 decoder's; otherwise its file is removed. The numbers go into export.json and the card
either way.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from engine.families import HeldOutOnnx
from engine.onnx import ONNX_DIR

INT8_FILE = "decoder.int8.onnx"
MAX_PERPLEXITY_RISE = 0.02  # the int8 decoder is offered while perplexity stays within 2% of fp32


def quantize_checked(bundle_dir: Path, held_out: HeldOutOnnx) -> dict[str, Any]:
    """Write the int8 decoder and the perplexity check (see the module docstring) → export.json's `int8`."""
    from engine.onnx.export_format import file_sha256

    out = bundle_dir / ONNX_DIR
    _quantize(out / "decoder.onnx", out / INT8_FILE, bundle_dir)
    fp32 = held_out.perplexity(None, "")
    int8 = held_out.perplexity(INT8_FILE, file_sha256(out / INT8_FILE))
    offered = int8 <= fp32 * (1 + MAX_PERPLEXITY_RISE)
    if not offered:
        (out / INT8_FILE).unlink()
    return {"file": INT8_FILE, "sha256": file_sha256(out / INT8_FILE) if offered else "", "offered": offered,
            "fp32_perplexity": round(fp32, 4), "int8_perplexity": round(int8, 4),
            "change_percent": round(100 * (int8 / fp32 - 1), 3), "documents": held_out.examples,
            "tokens": held_out.tokens}


def _quantize(graph: Path, int8: Path, bundle_dir: Path) -> None:
    """Write `graph` (a graph of `bundle_dir`) with the weights of its matrix products in int8 to `int8`.

    The quantizer only sees weights that are initializers: it reads a copy whose weights are filled
    from the bundle's file and, for a bundle of 16-bit weights, restored to fp32 (`store_exact_halves`
    keeps them in 16 bits behind a Cast). The int8 graph's other weights (embeddings) then refer to
    the bundle's file again, as the fp32 graphs' do."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from engine.bundles.bundle import WEIGHTS_FILE
    from engine.onnx.export import restore_full_weights, store_exact_halves
    from engine.onnx.shared_weights import load_graph, share_bundle_weights

    model = load_graph(graph, (bundle_dir / WEIGHTS_FILE).read_bytes())
    restore_full_weights(model)
    full = int8.with_suffix(".fp32.onnx")
    onnx.save(model, str(full))
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)  # the quantizer's "consider pre-processing" advice is for image models
    try:
        # Matrix products only: a quantized embedding lookup saves no time (Gather reads N rows) and would
        # store a second, int8 copy of the embedding instead of referring to the bundle's.
        quantize_dynamic(full, int8, weight_type=QuantType.QInt8, op_types_to_quantize=["MatMul"])
    finally:
        root.setLevel(level)
        full.unlink(missing_ok=True)
    quantized = onnx.load(str(int8))
    store_exact_halves(quantized)
    share_bundle_weights(quantized, bundle_dir / WEIGHTS_FILE)
    onnx.save(quantized, str(int8))

