"""The one small API the app and the CLI use: find bundles, load one, generate variants.

    engine = Engine()
    infos = engine.list_bundles()
    model = engine.load(infos[0].path, device="auto")
    variants = model.generate(GenerationRequest(prompt="Once", n=3), on_token, should_stop)

`generate` is blocking and calls `on_token` from the calling thread for every streamed token;
the app runs it in a worker thread and passes a `should_stop` that is checked every step.

A writer's own models reach the app here too: `importable_checkpoints()` (the pretrained checkpoints of
the local Hugging Face caches not imported yet), `import_checkpoint` (one of them, or a checkpoint
folder, written as a bundle in the user models folder) and `open_model_folder` (a folder the writer
picked: a bundle as it is, a checkpoint imported first). Importing hashes the checkpoint's weights, so
the app calls these off the UI thread.
"""

from __future__ import annotations

import functools
import importlib.util
import itertools
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import platformdirs

from engine.bundles import imported
from engine.bundles.base import BaseReference, read_base
from engine.bundles.bundle import (
    CARD_FILE,
    CONFIG_FILE,
    BundleError,
    bundle_family,
    read_bundle_card,
    read_bundle_config,
    read_bundle_json,
)
from engine.bundles.choice import bundle_tasks, choose_bundle, read_defaults
from engine.checkpoints.inspect import CheckpointError, CheckpointInfo
from engine.controls import LM_TASKS
from engine.decoding import DecodeConfig, TokenEvent, Variant
from engine.devices import gpu_unavailable_reason, resolve_device
from engine.files.small_reads import file_problem
from engine.loaded_model import GenerationRequest, LoadedModel
from engine.pos.tagger import Tagger, TaggerUnavailableError
from engine.process_memory import return_freed_memory
from engine.selection.stream import SelectingStream

if TYPE_CHECKING:  # onnxruntime's runner loads only when a bundle runs on it
    pass

RESOURCES_MODELS = Path(__file__).resolve().parent.parent / "resources" / "models"


def user_models_dir() -> Path:
    """Where a user's own bundles live (platform user data dir)."""
    return Path(platformdirs.user_data_dir("variorum", appauthor=False)) / "models"


@dataclass(frozen=True)
class BundleInfo:
    """A bundle found on disk, described without loading its weights."""

    path: Path
    name: str
    head: str
    summary: str  # first paragraph of the card, for pickers
    error: str = ""  # non-empty when the bundle looks unusable
    tasks: tuple[str, ...] = LM_TASKS  # what it can write (engine/bundles/choice.py)
    pretrained: bool = False  # built on a pretrained checkpoint (engine/bundles/base.py), not one of our small models


def describe_bundle(path: Path) -> BundleInfo:
    """Read only config.json and card.md, checked; report problems instead of raising."""
    try:
        config = read_bundle_config(path)
        card = read_bundle_card(path) if (path / CARD_FILE).exists() else ""
        base = read_base(path, config)
    except BundleError as error:
        return BundleInfo(path, path.name, "?", "", str(error).removeprefix(f"bundle {path}: ")[:300])
    paragraphs = [p.strip() for p in card.split("\n\n") if p.strip() and not p.startswith("#")]
    base = base if isinstance(base, BaseReference) else None  # a bundle on a bundle is found when it loads
    return BundleInfo(path, path.name, str(config["model"].get("head", "?")),
                      paragraphs[0].replace("\n", " ") if paragraphs else "", base.missing() if base else "",
                      bundle_tasks(config), pretrained=base is not None)


def coarse_pos_group(tag: str) -> str:
    """Coarse group (adjectives, nouns, …) of a PTB tag; unknown tags are "other"."""
    from engine.pos.tags import coarse_group_of

    return coarse_group_of(tag)


def tag_words(texts: list[str]) -> list[list[tuple[int, int, str]]]:
    """PTB-tag `texts` with the default tagger: per text, (start, end, tag) of each word.

    Raises TaggerUnavailableError (with the install command) when no tagger can run here.
    """
    tagged = _default_tagger().tag_texts(texts, progress=False)
    return [[(w.start, w.end, w.tag_) for w in words] for words in tagged]


def can_tag_words() -> bool:
    """Whether `tag_words` can run here: spaCy and its model are installed (a packaged app may leave them
    out). Checked without importing them, so asking costs nothing."""
    from engine.pos.spacy_backend import SPACY_MODEL

    return importlib.util.find_spec("spacy") is not None and importlib.util.find_spec(SPACY_MODEL) is not None


@functools.cache
def _default_tagger() -> Tagger:
    from engine.pos.backends import load_tagger

    return load_tagger()


class Engine:
    """Entry point for front ends: bundle discovery and loading, and importing a writer's own checkpoints.

    Imports are written to `models_dir` (the user models folder unless given); keep it among
    `search_dirs`, as the default is, so what is imported is listed."""

    def __init__(self, search_dirs: list[Path] | None = None, models_dir: Path | None = None) -> None:
        self.models_dir = models_dir if models_dir is not None else user_models_dir()
        self.search_dirs = search_dirs if search_dirs is not None else [RESOURCES_MODELS, self.models_dir]

    def default_bundle(self, task: str) -> BundleInfo | None:
        """The bundle `task` starts with (a folder's defaults.json, else the first that does it)."""
        return choose_bundle(self.list_bundles(), task, read_defaults(self.search_dirs))

    def list_bundles(self, extra: Iterable[Path] = ()) -> list[BundleInfo]:
        """Every bundle of the search folders, usable or not (`error` says why not), then each bundle folder
        of `extra` (ones a writer added from elsewhere) not listed already; a folder that cannot be listed is
        one unusable entry, so it never hides the others."""
        infos: list[BundleInfo] = []
        for directory in filter(os.path.isdir, self.search_dirs):
            try:
                found = sorted(p for p in directory.iterdir() if os.path.exists(p / CONFIG_FILE))
            except OSError as error:
                infos.append(BundleInfo(directory, directory.name, "?", "", f"cannot list this models folder "
                                                                          f"({error.strerror or error})"))
                continue
            infos.extend(describe_bundle(path) for path in found)
        listed = {path.resolve() for path in (Path(info.path) for info in infos)}
        for path in dict.fromkeys(Path(p) for p in extra):
            if path.resolve() not in listed:
                infos.append(describe_bundle(path))
        return infos

    def load(self, path: Path, device: str = "auto", runtime: str = "auto") -> LoadedModel:
        """Load and validate a bundle of any family (raises BundleError with a specific message).

        `runtime` (auto / torch / onnx / onnx-int8) picks what runs the backbone: torch, or the
        bundle's ONNX export on ONNX Runtime (engine/onnx/runtime.py), for every family."""
        target, path = resolve_device(device), Path(path)
        loaded = bundle_family(path).load(path, target, runtime)  # engine/families
        return_freed_memory()  # the load's temporaries (a base's dequantized GGUF)
        return loaded

    def importable_checkpoints(self) -> list[CheckpointInfo]:
        """The checkpoints of the local Hugging Face caches that can be imported and have no bundle yet in
        the search folders (read offline; one checkpoint revision is one import)."""
        done = self._imported_checkpoints()
        return [info for info in imported.importable_checkpoints() if info.path.resolve() not in done]

    def import_checkpoint(self, name_or_dir: str, out: Path | None = None) -> Path:
        """Write the checkpoint `name_or_dir` (a folder, or a name in the local caches) as a bundle at `out`,
        by default a new folder of `models_dir` named after it; returns the bundle's folder. Hashes the
        checkpoint's weights (seconds for GPT-2); raises CheckpointError with one clear message."""
        return imported.import_checkpoint(name_or_dir, out or self._new_bundle_folder(name_or_dir))

    def open_model_folder(self, folder: Path) -> Path:
        """The bundle of a folder a writer picked: a bundle folder as it is (checked, not loaded), a pretrained
        checkpoint imported first (`import_checkpoint`), as is a `.gguf` file or a folder holding one. Anything else
        raises a BundleError or CheckpointError saying what the folder is missing."""
        folder = Path(folder)
        if folder.suffix == ".gguf" and folder.is_file():
            return self.import_checkpoint(str(folder))
        if not folder.is_dir():
            raise BundleError(f"{folder} is not a folder")
        config = folder / CONFIG_FILE
        if config.exists() or config.is_symlink():  # a config.json that cannot be read is named as such
            problem = file_problem(config)
            if problem is not None:
                raise CheckpointError(f"{config} {problem}")
        gguf_files = sorted(p for p in folder.glob("*.gguf") if p.is_file())
        if not (folder / CONFIG_FILE).is_file() and len(gguf_files) == 1:  # llama.cpp's one-file model
            return self.import_checkpoint(str(gguf_files[0]))
        if not (folder / CONFIG_FILE).is_file() and gguf_files:
            names = ", ".join(p.name for p in gguf_files[:3]) + (", …" if len(gguf_files) > 3 else "")
            raise CheckpointError(f"{folder} holds {len(gguf_files)} .gguf files ({names}); put the one you want in "
                                  "a folder of its own, or run `variorum import FILE`")
        if not (folder / CONFIG_FILE).is_file():
            inside = sorted(p.name for p in folder.iterdir() if (p / CONFIG_FILE).is_file())[:3]
            hint = f"; pick one of the model folders in it ({', '.join(inside)})" if inside else ""
            raise CheckpointError(f"{folder} holds no model: a Variorum model folder and a pretrained checkpoint "
                                  f"both have a {CONFIG_FILE}, and this folder has none{hint}")
        config = read_bundle_json(folder)
        if isinstance(config, dict) and "format_version" in config:  # ours; transformers' configs never have it
            bundle_family(folder)  # every file present and the config readable, or the BundleError saying why
            return folder
        return self.import_checkpoint(str(folder))

    def _imported_checkpoints(self) -> set[Path]:
        """The checkpoint folders the bundles of the search folders were imported from."""
        found: set[Path] = set()
        for info in self.list_bundles():
            try:
                config = read_bundle_config(Path(info.path))
            except BundleError:
                continue  # listed as unusable; it imports nothing
            provenance = config.get("provenance")
            sections = [config.get("base"), provenance.get("imported_from") if isinstance(provenance, dict) else None]
            found.update(Path(s["checkpoint"]).resolve() for s in sections
                         if isinstance(s, dict) and isinstance(s.get("checkpoint"), str))
        return found

    def _new_bundle_folder(self, name_or_dir: str) -> Path:
        """A folder of `models_dir` that does not exist yet, named after the checkpoint ("org/gpt2" → gpt2,
        then gpt2-2, …), so a second import never clashes with the first."""
        source = Path(name_or_dir.strip("/\\"))
        name = source.stem if source.suffix == ".gguf" else source.name
        stem = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip(".-") or "imported"
        return next(folder for n in itertools.count(1)
                    if not (folder := self.models_dir / (stem if n == 1 else f"{stem}-{n}")).exists())


__all__ = [
    "BundleError",
    "BundleInfo",
    "CheckpointError",
    "CheckpointInfo",
    "DecodeConfig",
    "Engine",
    "GenerationRequest",
    "LoadedModel",
    "SelectingStream",
    "TaggerUnavailableError",
    "TokenEvent",
    "Variant",
    "can_tag_words",
    "coarse_pos_group",
    "gpu_unavailable_reason",
    "tag_words",
]
