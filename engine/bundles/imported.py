"""A writer's pretrained checkpoint written as a Variorum bundle, offline.

`import_checkpoint("gpt2", out)` finds the checkpoint (a folder, or a name in the local Hugging Face
cache: engine/checkpoints/hf_cache.py), checks it, asks the family that runs its architecture
(engine/families: `checkpoint_architectures`) to build the model over the renumbered vocabulary, and
writes a bundle on that checkpoint (engine/bundles/base.py): config, tokenizer and card, the
checkpoint's folder and the sha256 of each weights file, and only the tensors the import adds (none
for GPT-2 or BART). Loading rebuilds the model from the checkpoint after checking those hashes, so an
import takes seconds and a few kilobytes however large the checkpoint is.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import torch

from engine.bundles.base import BaseReference
from engine.bundles.bundle import OnBase, save_bundle
from engine.checkpoints.hf_cache import cached_checkpoints, find_checkpoint
from engine.checkpoints.inspect import CheckpointError, CheckpointInfo, inspect_checkpoint
from engine.families import family_for_architecture


def _card(info: CheckpointInfo, parameters: int, tokens: int, reference: BaseReference, trainer: str) -> str:
    return (f"# {info.name}, imported\n\n**What it is.** The pretrained {info.architecture} checkpoint "
            f"`{info.name}` ({parameters / 1e6:.1f}M parameters), imported as it is: its weights, its vocabulary "
            f"({info.tokenizer_size:,} tokens, renumbered to {tokens:,} with Variorum's special tokens first) and "
            f"its own output layer. Fine-tune it (`variorum {trainer} --init-from THIS-FOLDER`) for a task or "
            "to add our heads.\n\n"
            f"## Where it came from\nThis bundle stores no weights of its own: it reads them from the checkpoint "
            f"folder `{info.path}` and checks them against these hashes each time it loads.\n"
            + "".join(f"- `{name}` sha256 `{digest}`\n" for name, digest in reference.weights_sha256.items()))


def is_importable(info: CheckpointInfo) -> bool:
    """True when a registered family runs `info`'s architecture."""
    return family_for_architecture(info.architecture) is not None


def importable_checkpoints(environ: Mapping[str, str] | None = None) -> list[CheckpointInfo]:
    """The checkpoints in the local Hugging Face caches, and the GGUF files where writers keep them
    (engine/checkpoints/gguf_search.py `find_gguf_files`), that `import_checkpoint` takes."""
    found = [info for _, info in cached_checkpoints(environ) if not isinstance(info, str) and is_importable(info)]
    return found + [info for _, info in gguf_checkpoints(environ) if not isinstance(info, str)]


def gguf_checkpoints(environ: Mapping[str, str] | None = None) -> list[tuple[Path, CheckpointInfo | str]]:
    """Every GGUF file found on this computer with its checkpoint info, or why it cannot be imported."""
    from engine.checkpoints.gguf_search import find_gguf_files

    listed: list[tuple[Path, CheckpointInfo | str]] = []
    for path in find_gguf_files(environ):
        try:
            listed.append((path, inspect_checkpoint(path)))
        except CheckpointError as error:
            listed.append((path, str(error)))
    return listed


def import_checkpoint(name_or_dir: str, out: Path, environ: Mapping[str, str] | None = None) -> Path:
    """Write the checkpoint `name_or_dir` as a bundle at `out` (which must not exist yet); returns `out`."""
    if out.exists():
        raise CheckpointError(f"{out} already exists; pick a new folder for the bundle")
    info = find_checkpoint(name_or_dir, os.environ if environ is None else environ)
    family = family_for_architecture(info.architecture)
    if family is None:
        raise CheckpointError(f"{info.name}: {info.architecture} checkpoints are recognised but not imported yet")
    model, tokenizer = family.from_checkpoint(info)
    broken = next((name for name, tensor in model.state_dict().items()
                   if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all())), None)
    if broken is not None:  # caught here, not as a diverged loss on a fine-tune's first step
        raise CheckpointError(f"{info.path}: its weights hold NaN or infinite values (in {broken}): the checkpoint "
                              "is damaged; download or convert it again")
    reference = BaseReference.of(info)
    provenance = {"imported_from": reference.to_dict()}
    card = _card(info, model.num_parameters(), tokenizer.vocab_size, reference, family.trainer)
    save_bundle(out, model, tokenizer, card, provenance, on_base=OnBase(reference, model.state_dict()))
    return out
