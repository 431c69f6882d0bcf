"""The one small API the app and the CLI use: find bundles, load one, generate variants.

    engine = Engine()
    infos = engine.list_bundles()
    model = engine.load(infos[0].path, device="auto")
    variants = model.generate(GenerationRequest(prompt="Once", n=3), on_token, should_stop)

`generate` is blocking and calls `on_token` from the calling thread for every streamed token;
the app runs it in a worker thread and passes a `should_stop` that is checked every step.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import platformdirs

from engine.bundles.bundle import (
    CARD_FILE,
    CONFIG_FILE,
    BundleError,
    bundle_family,
    read_bundle_card,
    read_bundle_config,
)
from engine.bundles.choice import bundle_tasks, choose_bundle, read_defaults
from engine.controls import LM_TASKS
from engine.decoding import DecodeConfig, TokenEvent, Variant
from engine.devices import gpu_unavailable_reason, resolve_device
from engine.loaded_model import GenerationRequest, LoadedModel
from engine.pos.tagger import Tagger, TaggerUnavailableError

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


def describe_bundle(path: Path) -> BundleInfo:
    """Read only config.json and card.md, checked; report problems instead of raising."""
    try:
        config = read_bundle_config(path)
        card = read_bundle_card(path) if (path / CARD_FILE).exists() else ""
    except BundleError as error:
        return BundleInfo(path, path.name, "?", "", str(error).removeprefix(f"bundle {path}: ")[:300])
    paragraphs = [p.strip() for p in card.split("\n\n") if p.strip() and not p.startswith("#")]
    return BundleInfo(path, path.name, str(config["model"].get("head", "?")),
                      paragraphs[0].replace("\n", " ") if paragraphs else "", tasks=bundle_tasks(config))


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
    """Entry point for front ends: bundle discovery and loading."""

    def __init__(self, search_dirs: list[Path] | None = None) -> None:
        self.search_dirs = search_dirs if search_dirs is not None else [RESOURCES_MODELS, user_models_dir()]

    def default_bundle(self, task: str) -> BundleInfo | None:
        """The bundle `task` starts with (a folder's defaults.json, else the first that does it)."""
        return choose_bundle(self.list_bundles(), task, read_defaults(self.search_dirs))

    def list_bundles(self) -> list[BundleInfo]:
        """Every bundle of the search folders, usable or not (`error` says why not); a folder that cannot
        be listed is one unusable entry, so it never hides the others."""
        infos: list[BundleInfo] = []
        for directory in filter(os.path.isdir, self.search_dirs):
            try:
                found = sorted(p for p in directory.iterdir() if os.path.exists(p / CONFIG_FILE))
            except OSError as error:
                infos.append(BundleInfo(directory, directory.name, "?", "", f"cannot list this models folder "
                                                                          f"({error.strerror or error})"))
                continue
            infos.extend(describe_bundle(path) for path in found)
        return infos

    def load(self, path: Path, device: str = "auto", runtime: str = "auto") -> LoadedModel:
        """Load and validate a bundle of any family (raises BundleError with a specific message).

        `runtime` (auto / torch / onnx / onnx-int8) picks what runs the backbone: torch, or the
        bundle's ONNX export on ONNX Runtime (engine/onnx/runtime.py), for every family."""
        target, path = resolve_device(device), Path(path)
        return bundle_family(path).load(path, target, runtime)  # engine/families


__all__ = [
    "BundleError",
    "BundleInfo",
    "DecodeConfig",
    "Engine",
    "GenerationRequest",
    "LoadedModel",
    "TaggerUnavailableError",
    "TokenEvent",
    "Variant",
    "can_tag_words",
    "coarse_pos_group",
    "gpu_unavailable_reason",
    "tag_words",
]
