"""A writer's GPT-2 checkpoint written as a Variorum bundle, offline.

`import_checkpoint("gpt2", out)` finds the checkpoint (a folder, or a name in the local Hugging Face
cache: engine/checkpoints/hf_cache.py), checks it, builds the language model of
engine/checkpoints/gpt2_import.py and writes a bundle (the one bundle format, engine/bundles/bundle.py) with a
card saying where it came from: the checkpoint's path, name and the sha256 of each weights file, so a
bundle can always be traced back to the files it was made from. The bundle holds the whole model: it
runs without the checkpoint folder.

BART checkpoints are recognised but not imported yet: they become Story / Abstract / Paraphrase models
only through a fine-tune, which is still to be built on this renumbered vocabulary.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from engine.bundles.bundle import save_bundle
from engine.checkpoints.gpt2_import import import_gpt2
from engine.checkpoints.hf_cache import find_checkpoint
from engine.checkpoints.inspect import CheckpointError, CheckpointInfo
from engine.data.corpus import file_sha256

IMPORTED_FAMILIES = ("gpt2",)  # BART: recognised, imported once its fine-tune on this vocabulary exists


def _card(info: CheckpointInfo, parameters: int, tokens: int, hashes: dict[str, str]) -> str:
    return (f"# {info.name}, imported\n\n**What it is.** The pretrained GPT-2 checkpoint `{info.name}` "
            f"({parameters / 1e6:.1f}M parameters), imported as it is: its blocks, its vocabulary "
            f"({info.tokenizer_size:,} tokens, renumbered to {tokens:,} with Variorum's special tokens first) and "
            "a softmax output layer tied to its embedding, as GPT-2's own. It writes what the checkpoint "
            "writes; fine-tune it to add our heads.\n\n"
            f"## Where it came from\n- folder: `{info.path}`\n"
            + "".join(f"- `{name}` sha256 `{digest}`\n" for name, digest in hashes.items()))


def import_checkpoint(name_or_dir: str, out: Path, environ: Mapping[str, str] | None = None) -> Path:
    """Write the checkpoint `name_or_dir` as a bundle at `out` (which must not exist yet); returns `out`."""
    if out.exists():
        raise CheckpointError(f"{out} already exists; pick a new folder for the bundle")
    info = find_checkpoint(name_or_dir, os.environ if environ is None else environ)
    if info.family not in IMPORTED_FAMILIES:
        raise CheckpointError(f"{info.name}: {info.architecture} checkpoints are recognised but not imported yet; "
                              "GPT-2 (GPT2LMHeadModel) checkpoints are")
    model, tokenizer = import_gpt2(info)
    hashes = {p.name: file_sha256(p) for p in info.weights}  # read once: a checkpoint's weights are hundreds of MB
    provenance = {"imported_from": {"name": info.name, "path": str(info.path), "architecture": info.architecture,
                                    "weights_sha256": hashes}}
    save_bundle(out, model, tokenizer, _card(info, model.num_parameters(), tokenizer.vocab_size, hashes), provenance)
    return out
