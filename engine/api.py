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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import platformdirs
import torch

from engine.bundle import (
    CARD_FILE,
    CONFIG_FILE,
    Bundle,
    BundleError,
    bundle_family,
    read_bundle_card,
    read_bundle_config,
)
from engine.bundle_choice import bundle_tasks, choose_bundle, read_defaults
from engine.controls import LM_TASKS, Capabilities
from engine.decoding import DecodeConfig, DecodeStream, TokenEvent, Variant
from engine.decoding.backbone_runner import BackboneRunner
from engine.devices import gpu_unavailable_reason, resolve_device
from engine.loaded_model import GenerationRequest, LoadedModel
from engine.model import LanguageModel
from engine.pos.tagger import Tagger, TaggerUnavailableError
from engine.prompt_join import stream_after_prompt
from engine.word_sources import RealWordVocabulary, lm_vocabulary

if TYPE_CHECKING:  # onnxruntime's runner loads only when a bundle runs on it
    from engine.onnx.runner import OnnxBackboneRunner
    from engine.onnx.runtime import RuntimeChoice

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
    tasks: tuple[str, ...] = LM_TASKS  # what it can write (engine/bundle_choice.py)


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


class LanguageLoadedModel(LoadedModel):
    """A language-model bundle loaded on a device, ready to continue text."""

    runner: BackboneRunner[Any] | None = None  # None: the torch model itself

    def __init__(self, bundle: Bundle, device: torch.device, runtime: str = "torch") -> None:
        """`runtime`: auto / torch / onnx (engine/onnx/runtime.py). Torch on a GPU replays a recorded
        bf16 step (engine/decoding/graphed_step.py) when it passes its load-time check."""
        self.bundle = bundle
        self.device = device
        if runtime != "torch":
            config = bundle.model.config
            choice = choose_lm_runtime(bundle.path, config.block_size, config.n_embd, runtime, device)
            self.runtime, self.runner, self.runtime_note = choice.name, choice.runner, choice.note
        if self.runner is None and device.type == "cuda":
            from engine.decoding.graphed_step import graphed_runtime

            graphed, note = graphed_runtime(bundle.model.backbone)
            if graphed is not None:
                self.runtime, self.runner = graphed.name, graphed
            self.runtime_note = "; ".join(filter(None, [self.runtime_note, note]))
        self._warm_up()

    def _warm_up(self) -> None:
        """One two-token decode of two rows while loading, so the first request's first token does not
        wait for packing weights (engine/packed_linear.py) or setting up kernels."""
        list(stream_after_prompt(self.bundle.model, self.bundle.tokenizer, "", 2,
                                 DecodeConfig(max_new_tokens=2, seed=0), runner=self.runner))

    @property
    def capabilities(self) -> Capabilities:
        """Which controls this model honours (engine/controls.py): the CLI, the app and eval read this."""
        return Capabilities(self.bundle.model.head.capabilities(), LM_TASKS)

    def stream(self, request: GenerationRequest, should_stop: Callable[[], bool] | None = None) -> DecodeStream:
        if request.task not in LM_TASKS:
            raise ValueError(f"this model can only continue text; task {request.task!r} needs a model trained for it")
        if request.beam_width > 1:
            raise ValueError("beam search is for story / abstract / paraphrase models; a language model samples")
        # Encoded without trailing whitespace; variants come back ready to append (engine/prompt_join.py).
        return stream_after_prompt(
            self.bundle.model, self.bundle.tokenizer, request.prompt, request.n, request.decode, should_stop,
            self.runner, self.speller(request),
        )

    @property
    def bundle_path(self) -> Path:
        return self.bundle.path

    def _real_word_vocabulary(self, training: frozenset[str] | None) -> RealWordVocabulary:
        return lm_vocabulary(training, self.bundle.tokenizer, self.device)

    def group_names(self) -> list[str]:
        """Labels of the head's sampling groups (POS tags, frequency classes, …) for colouring tokens."""
        return self.bundle.model.head.group_names()

    def token_counts(self) -> list[int]:
        """Training-set count of every token id (the frequency classes the app colours by)."""
        return [int(c) for c in self.bundle.tokenizer.counts]


def choose_lm_runtime(bundle_dir: Path, block_size: int, n_embd: int, runtime: str,
                      device: torch.device) -> RuntimeChoice[OnnxBackboneRunner]:
    """Resolve `runtime` for a language-model bundle (engine/onnx/runtime.py): its ONNX runner is the
    exported GPT-2 step behind the backbone-runner seam."""
    from engine.onnx.runner import OnnxBackboneRunner
    from engine.onnx.runtime import choose_runtime

    return choose_runtime(bundle_dir, LanguageModel.kind, runtime, device,
                          lambda graphs: OnnxBackboneRunner(graphs, block_size, n_embd))


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
    "LanguageLoadedModel",
    "LoadedModel",
    "TaggerUnavailableError",
    "TokenEvent",
    "Variant",
    "can_tag_words",
    "coarse_pos_group",
    "gpu_unavailable_reason",
    "tag_words",
]
