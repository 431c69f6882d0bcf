"""What an ONNX export is, as both its writer and its reader know it.

The exporter (`export.py`) writes these and the runtime (`session.py`, `runner.py`,
`seq2seq_runner.py`) checks and reads them, so the runtime never imports the exporter: the record's
format numbers, the graph names of the per-layer cache tensors and the sha256 of a file.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

EXPORT_FORMAT = 2  # 2: graph weights refer to the bundle's weights file; 1 (still read): graphs hold them
READABLE_FORMATS = (1, 2)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def cache_names(prefix: str, layers: int) -> list[str]:
    """Graph names of the cache tensors: `past_keys_0, past_values_0, past_keys_1, …` (prefix "past"/"present")."""
    return [f"{prefix}_{kind}_{layer}" for layer in range(layers) for kind in ("keys", "values")]
