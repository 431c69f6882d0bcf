"""Checkpoints by name from the local Hugging Face cache, offline: never a hub call.

Where transformers puts downloads, in its order: `$HF_HUB_CACHE`, `$HF_HOME/hub`, then
`~/.cache/huggingface/hub`. A model `org/name` (or `name`) lives in `models--org--name/`, each
downloaded revision a folder `snapshots/<commit>/` whose files link into `blobs/`, and
`refs/main` names the commit `main` pointed at when it was last downloaded. A name resolves to
that snapshot, or, when `refs/main` is missing (a download by commit), to the most recently
written snapshot.

`find_checkpoint("gpt2")` → the checked `CheckpointInfo` (engine/checkpoints/inspect.py) or one
`CheckpointError` naming the folders it looked in; `cached_checkpoints()` lists every cached
model with, for each, its info or why it cannot be imported (for `variorum bundles` and the
app's model box).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from engine.checkpoints.inspect import CheckpointError, CheckpointInfo, inspect_checkpoint

MODEL_PREFIX = "models--"


def cache_roots(environ: Mapping[str, str] | None = None) -> list[Path]:
    """The cache folders to look in, in transformers' order, each once (missing ones included)."""
    env = os.environ if environ is None else environ
    candidates = []
    if env.get("HF_HUB_CACHE"):
        candidates.append(Path(env["HF_HUB_CACHE"]).expanduser())
    if env.get("HF_HOME"):
        candidates.append(Path(env["HF_HOME"]).expanduser() / "hub")
    home = Path(env["HOME"]) if env.get("HOME") else Path.home()
    candidates.append(home / ".cache" / "huggingface" / "hub")
    return list(dict.fromkeys(candidates))


def _folder_name(name: str) -> str:
    """"org/name" → "models--org--name" (the cache's own spelling)."""
    return MODEL_PREFIX + name.strip("/").replace("/", "--")


def snapshot_of(model_folder: Path) -> Path:
    """The snapshot `refs/main` points at, else the newest snapshot; CheckpointError when there is none."""
    snapshots = model_folder / "snapshots"
    if not snapshots.is_dir():
        raise CheckpointError(f"{model_folder}: no downloaded snapshot in it")
    ref = model_folder / "refs" / "main"
    if ref.is_file():
        commit = ref.read_text(encoding="utf-8", errors="replace").strip()
        if commit and (snapshots / commit).is_dir():
            return snapshots / commit
    found = sorted((p for p in snapshots.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime)
    if not found:
        raise CheckpointError(f"{model_folder}: no downloaded snapshot in it")
    return found[-1]


def _valid_name(name: str) -> bool:
    parts = name.strip("/").split("/")
    return 1 <= len(parts) <= 2 and all(p and p not in (".", "..") and "--" not in p for p in parts)


def find_checkpoint(name_or_dir: str, environ: Mapping[str, str] | None = None) -> CheckpointInfo:
    """A checkpoint folder, or a model name looked up in the local Hugging Face cache (never downloaded)."""
    path = Path(name_or_dir).expanduser()
    if path.is_dir():
        return inspect_checkpoint(path.resolve())
    if path.suffix == ".gguf" or (os.path.lexists(path) and not path.is_file()):  # a FIFO, device, broken link
        return inspect_checkpoint(path)  # not resolved: a cache snapshot's .gguf links to a blob without the suffix
    if not _valid_name(name_or_dir):
        raise CheckpointError(f"{name_or_dir}: no such folder, and not a model name like 'gpt2' or 'org/model'")
    roots = cache_roots(environ)
    for root in roots:
        folder = root / _folder_name(name_or_dir)
        if folder.is_dir():
            return inspect_checkpoint(snapshot_of(folder), name_or_dir.strip("/"))
    looked = ", ".join(str(r) for r in roots)
    raise CheckpointError(f"{name_or_dir}: no such folder, and not in the local Hugging Face cache (looked in "
                          f"{looked}); Variorum never downloads: copy the checkpoint to this machine first")


def cached_checkpoints(environ: Mapping[str, str] | None = None) -> list[tuple[str, CheckpointInfo | str]]:
    """Every model in the local caches as (name, its info, or why it cannot be imported), by name."""
    found: dict[str, CheckpointInfo | str] = {}
    for root in cache_roots(environ):
        if not root.is_dir():
            continue
        for folder in sorted(root.glob(MODEL_PREFIX + "*")):
            name = folder.name[len(MODEL_PREFIX):].replace("--", "/")
            if name in found or not folder.is_dir():
                continue  # an earlier cache root wins, as in transformers
            try:
                found[name] = inspect_checkpoint(snapshot_of(folder), name)
            except CheckpointError as error:
                found[name] = str(error)
    return sorted(found.items())
