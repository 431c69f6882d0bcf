"""The engine API for PermGen bundles: a `LoadedModel` that writes stories / abstracts.

`Engine.load` returns this for a bundle whose config says kind "permgen". Requests name the task
the bundle was trained for and give `title`, `keywords` (empty → the title's content words,
engine/permgen/keywords.py), `num_sentences` (1–10; None = the model decides, up to 10) and
`sentence_order` (None = the model's choice, [k] = start with sentence k, a full permutation =
that order). A `--no-permute` baseline bundle starts every candidate with its most likely
sentence instead of distinct ones (it never saw another first sentence in training).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from engine.api import GenerationRequest, LoadedModel
from engine.permgen.bundle import PermGenBundle
from engine.permgen.control import OrderControl
from engine.permgen.decode import PermGenStream
from engine.permgen.keywords import title_keywords
from engine.permgen.text import format_source, normalize


class PermGenLoadedModel(LoadedModel):
    """A PermGen bundle on a device; same interface as `LoadedModel` (its LM bundle is unused)."""

    def __init__(self, bundle: PermGenBundle, device: torch.device) -> None:
        self.permgen = bundle
        self.device = device

    @property
    def capabilities(self) -> dict[str, object]:
        config = self.permgen.model.config
        caps = self.permgen.model.head.capabilities()
        caps.update(tasks=[config.task], max_sentences=config.max_sentences, sentence_order=True,
                    permuted_training=config.permute)
        return caps

    def source_text(self, request: GenerationRequest) -> str:
        """The encoder input for a request (keywords from the title when none are given)."""
        lowercase = self.permgen.model.config.lowercase
        keywords = list(request.keywords) or title_keywords(normalize(request.title, lowercase))
        return format_source(request.title, keywords, lowercase)

    def stream(self, request: GenerationRequest, should_stop: Callable[[], bool] | None = None) -> PermGenStream:
        config = self.permgen.model.config
        if request.task != config.task:
            raise ValueError(f"this model writes a {config.task!r}; it cannot do task {request.task!r}")
        if not request.title.strip() and not request.keywords:
            raise ValueError(f"a {config.task} needs a title or keywords")
        control = OrderControl(request.num_sentences, tuple(request.sentence_order or ()), config.permute)
        source = self.permgen.tokenizer.encode(self.source_text(request))
        return PermGenStream(self.permgen.model, self.permgen.tokenizer, source, request.n, request.decode,
                             control, should_stop)

    def group_names(self) -> list[str]:
        return self.permgen.model.head.group_names()

    def token_counts(self) -> list[int]:
        return [int(c) for c in self.permgen.tokenizer.counts]
