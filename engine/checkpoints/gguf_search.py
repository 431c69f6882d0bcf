"""Where writers keep GGUF files: the .gguf files `find_gguf_files` lists for import.

- the Hugging Face hub cache (`$HF_HUB_CACHE`, `$HF_HOME/hub`, `~/.cache/huggingface/hub`, as in
  `engine/checkpoints/hf_cache.py`): files in `models--*/snapshots/*/` and their subfolders;
- llama.cpp's download cache: `$LLAMA_CACHE`, else `~/.cache/llama.cpp`;
- LM Studio's models: `~/.lmstudio/models` and `~/.cache/lm-studio/models` (`publisher/model/file.gguf`);
- any folders passed in.

Each folder is searched to a depth of `MAX_SEARCH_DEPTH` folders, at most `MAX_SEARCH_ENTRIES` entries and
`MAX_FOUND_FILES` files in all; an unreadable folder is skipped.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from engine.checkpoints.hf_cache import MODEL_PREFIX, cache_roots

MAX_SEARCH_DEPTH = 4
MAX_SEARCH_ENTRIES = 50_000
MAX_FOUND_FILES = 1000


def _search(folder: Path, found: dict[Path, Path], budget: list[int]) -> None:
    """Add the .gguf files in `folder` and its subfolders (to MAX_SEARCH_DEPTH) to `found`, by resolved path
    (of several paths to one file, the first in sort order).

    `budget` is [entries left]; symlinked folders are not entered (a link loop would never end).
    """
    stack = [(folder, 0)]
    while stack and budget[0] > 0 and len(found) < MAX_FOUND_FILES:
        current, depth = stack.pop()
        try:
            with os.scandir(current) as entries:
                for entry in entries:
                    budget[0] -= 1
                    if budget[0] <= 0 or len(found) >= MAX_FOUND_FILES:
                        return
                    if entry.is_dir(follow_symlinks=False):
                        if depth < MAX_SEARCH_DEPTH:
                            stack.append((Path(entry.path), depth + 1))
                    elif entry.name.lower().endswith(".gguf") and entry.is_file():  # a link into blobs/ too
                        path = Path(entry.path)
                        key = path.resolve()
                        if key not in found or path < found[key]:  # the same choice whatever the order
                            found[key] = path
        except OSError:  # unreadable or vanished: skipped
            continue


def gguf_folders(environ: Mapping[str, str] | None = None) -> list[Path]:
    """The folders find_gguf_files searches besides the hub cache's snapshots (missing ones included)."""
    env = os.environ if environ is None else environ
    home = Path(env["HOME"]) if env.get("HOME") else Path.home()
    llama_cache = Path(env["LLAMA_CACHE"]).expanduser() if env.get("LLAMA_CACHE") else home / ".cache/llama.cpp"
    return [llama_cache, home / ".lmstudio/models", home / ".cache/lm-studio/models"]


def find_gguf_files(environ: Mapping[str, str] | None = None, folders: Sequence[Path] = ()) -> list[Path]:
    """The .gguf files in the Hugging Face cache, llama.cpp's cache, LM Studio's folders and `folders`
    (module docstring), sorted, each file once however many links lead to it."""
    found: dict[Path, Path] = {}
    budget = [MAX_SEARCH_ENTRIES]
    snapshots: list[Path] = []
    for root in cache_roots(environ):
        try:
            snapshots += sorted(root.glob(f"{MODEL_PREFIX}*/snapshots/*"))
        except OSError:
            continue
    for folder in [*snapshots, *gguf_folders(environ), *(Path(f).expanduser() for f in folders)]:
        if folder.is_dir():
            _search(folder, found, budget)
    return sorted(found.values())
