"""ONNX Runtime inference: export a bundle's backbone, run it in place of the torch one.

What is exported, and what stays in torch (docs/onnx-runtime.md):

- the **backbone step** — token ids + per-layer key/value cache in, hidden states [N, T, D] + the
  grown cache out (`graphs.GPT2StepGraph`, `llama_graphs.LlamaStepGraph`; PermGen:
  `seq2seq_graphs.BartStepGraph`, which also takes hierarchical positions and the source's cross
  keys / values from `BartEncoderGraph`);
- the **output head stays in torch**. The head's weight-dependent projections (output layer, F²
  class logits, the termination gate u·h) are one matrix product each, as fast in torch as in
  ONNX Runtime, and keeping them in torch means the two-level distributions (F², POSG, ST/NMST)
  come from the one implementation in `engine.heads`, so they are identical by construction and
  the sampler, processors and controls are the same code under both runtimes. What ONNX Runtime
  speeds up is the backbone: dozens of small ops per step whose per-op cost dominates in eager torch.

The runners plug into the decoding core's seams: `runner.OnnxBackboneRunner` has the language
model's (`new_cache(n)`, `decode(ids, cache) -> hidden [N, W, D]`), `seq2seq_runner.
OnnxSeq2SeqRunner` PermGen's (`start(source, n)`, `decode(ids, sentence, local, cache)`).

This package's `__init__` imports nothing heavy: `RUNTIMES` is read by the CLI and the app without
torch or onnxruntime; onnx / onnxruntime are imported only when a graph is exported or run.
"""

from __future__ import annotations

RUNTIMES = ("auto", "torch", "onnx", "onnx-int8")  # engine/onnx/runtime.py says what each means
ONNX_DIR = "onnx"  # inside the bundle: decoder.onnx and export.json
EXPORT_FILE = "export.json"

__all__ = ["EXPORT_FILE", "ONNX_DIR", "RUNTIMES"]
