"""What every loaded model offers the app, the CLI and the evaluation: requests in, variant streams out.

`GenerationRequest` is what a writer asks for; `LoadedModel` is the base of a bundle loaded on a
device, whatever its family: the language model (engine/lm/loaded.py, `LanguageLoadedModel`) and PermGen
(engine/permgen/loaded.py, `PermGenLoadedModel`). Both modules import this one and neither imports the
other at import time, so there is no import cycle between them.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch

from engine.config import check_field_types
from engine.controls import MAX_VARIANTS, TASKS, Capabilities
from engine.decode_fields import BEAM_WIDTH
from engine.decoding import DecodeConfig, DecodeStream, TokenEvent, Variant
from engine.decoding.real_words import WordSpeller
from engine.selection.stream import ScorerChoice, SelectingStream
from engine.tokenizer import MAX_SENTENCES
from engine.word_sources import RealWordVocabulary, read_bundle_words


class OrderError(ValueError):
    """A sentence count or order that a paragraph cannot follow; the message says why."""


def check_sentence_plan(num_sentences: int | None, order: Sequence[int]) -> None:
    """`OrderError` unless a paragraph can be written with `num_sentences` sentences (1 to MAX_SENTENCES;
    None: the model decides, up to MAX_SENTENCES) in `order`: none, the first sentence's number, or a full
    order using each number from 1 to `num_sentences` once."""
    n = num_sentences
    if n is not None and (isinstance(n, bool) or not 1 <= n <= MAX_SENTENCES):
        raise OrderError(f"number of sentences must be from 1 to {MAX_SENTENCES}, got {n}")
    limit = n if n is not None else MAX_SENTENCES
    if any(not 1 <= t <= limit for t in order):
        raise OrderError(f"sentence numbers must be from 1 to {limit}, got {list(order)}")
    if len(order) > 1 and (n is None or sorted(order) != list(range(1, n + 1))):
        raise OrderError(
            f"a full order must use each number from 1 to the number of sentences exactly once, "
            f"got {list(order)} for {n} sentences"
        )


@dataclass(frozen=True)
class GenerationRequest:
    """What the writer asked for: task, inputs, number of variants and decoding settings."""

    prompt: str = ""
    n: int = 3
    task: str = "continue"
    decode: DecodeConfig = field(default_factory=DecodeConfig)
    # paragraph tasks: the input and the sentence plan (`check_sentence_plan`)
    title: str = ""
    keywords: list[str] = field(default_factory=list, hash=False)
    num_sentences: int | None = None  # 1-10; None = the model decides (up to 10)
    sentence_order: list[int] | None = field(default=None, hash=False)  # None / [first] / full order
    beam_width: int = 1  # PermGen / paraphrase bundles: > 1 = beam search inside sentences
    document: str = ""  # the writer's whole document: its words count as real words (decode.real_words)

    def __post_init__(self) -> None:
        check_field_types(self)  # a ConfigError (ValueError) naming the field: n=1.5, prompt=None, …
        for name, text in (("prompt", self.prompt), ("title", self.title), ("document", self.document),
                           *(("keywords", k) for k in self.keywords)):
            try:
                text.encode("utf-8")
            except UnicodeEncodeError as error:  # e.g. a command-line argument with bytes that are not UTF-8
                raise ValueError(f"{name} is not valid UTF-8 text (undecodable byte at position {error.start}); "
                                 "save or type it as UTF-8") from None
        if self.task not in TASKS:
            raise ValueError(f"task {self.task!r} is not available; this engine supports {list(TASKS)}")
        if not 1 <= self.n <= MAX_VARIANTS:
            raise ValueError(f"number of variants must be between 1 and {MAX_VARIANTS}, got {self.n}")
        BEAM_WIDTH.check(self.beam_width)
        if self.task in ("story", "abstract"):  # the count and the order are checked up front
            check_sentence_plan(self.num_sentences, self.sentence_order or ())

    @property
    def writer_texts(self) -> list[str]:
        """The writer's own text: their words are real words under `decode.real_words`."""
        return [self.prompt, self.document, self.title, *self.keywords]


# how a paraphrase model on the pretrained base chooses among its drafts (engine/permgen/meaning_floor.py)
PARAPHRASE_DRAFTS_NOTE = ("each sentence's drafts are kept where they keep its meaning (another round of drafts "
                          "where too few do), and the likeliest that differ most from the "
                          "sentence and from each other are shown")


def check_drafts(task: str, beam_width: int, drafts: int, paraphrase_drafts: bool = False) -> None:
    """ValueError when drafts > 1 cannot apply: beam search, or a paraphrase on a model without a meaning floor
    (`paraphrase_drafts`: `Capabilities.chooses_drafts("paraphrase")`), has nothing to choose among."""
    if drafts > 1 and (beam_width > 1 or (task == "paraphrase" and not paraphrase_drafts)):
        raise ValueError("choosing among drafts is for sampled Continue, Story and Abstract variants and for "
                         "paraphrases on the pretrained base; set drafts to 1 for other paraphrases and for "
                         "beam search")


class LoadedModel(ABC):
    """A bundle loaded on a device, ready to generate."""

    device: torch.device
    runtime = "torch"  # what runs the decoder step, e.g. "onnx (CPUExecutionProvider)" (engine/onnx/runtime.py)
    runtime_note = ""  # why a faster runtime (ONNX, the recorded GPU step) fell back, '' when none did
    selection_note = ""  # which scorer chose the last request's drafts (engine/coherence/choice.py)
    _real_words: RealWordVocabulary | None = None  # built by the first request with real words on

    @property
    @abstractmethod
    def capabilities(self) -> Capabilities:
        """Which controls this model honours and what it writes (engine/controls.py): the CLI, the app
        and eval read this."""

    def stream(self, request: GenerationRequest, should_stop: Callable[[], bool] | None = None) -> DecodeStream:
        """A stream of the request's variants; a request this model cannot serve raises ValueError. With
        `decode.drafts` K > 1 it drafts K·N and shows the N chosen (engine/selection/stream.py); a paraphrase's
        meaning floor drafts and chooses inside its stream, sentence by sentence (engine/permgen/meaning_floor.py)."""
        drafts = request.decode.drafts
        if drafts == 1:
            return self.stream_rows(request, request.n, should_stop)
        check_drafts(request.task, request.beam_width, drafts, self.capabilities.chooses_drafts("paraphrase"))
        if request.task == "paraphrase":  # its meaning floor chooses among each sentence's drafts
            self.selection_note = PARAPHRASE_DRAFTS_NOTE
            return self.stream_rows(request, request.n, should_stop)
        choice = self.drafts_scorer()
        prompt = request.prompt or ". ".join(filter(None, [request.title, *request.keywords]))
        self.selection_note = choice.note
        return SelectingStream(self.stream_rows(request, request.n * drafts, should_stop), request.n,
                               functools.partial(choice.scores, prompt), request.prompt)

    @abstractmethod
    def stream_rows(self, request: GenerationRequest, rows: int,
                    should_stop: Callable[[], bool] | None = None) -> DecodeStream:
        """The request's variants as sampled, `rows` of them (`request.n`, or K·N drafts), nothing chosen."""

    @abstractmethod
    def drafts_scorer(self) -> ScorerChoice:
        """Which scorer chooses among this model's drafts (engine/coherence/choice.py)."""

    def generate(
        self,
        request: GenerationRequest,
        on_token: Callable[[TokenEvent], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> list[Variant]:
        stream = self.stream(request, should_stop)
        for event in stream:
            if on_token is not None:
                on_token(event)
        return stream.variants

    def prepare(self, task: str) -> None:
        """Load what `task` needs beyond the weights, so that its first request does not wait for it (the app
        calls this in the background when a writer picks the mode); most tasks need nothing more."""
        return None

    def speller(self, request: GenerationRequest) -> WordSpeller | None:
        """The real words of `request` (engine/word_sources.py); None when `request.decode.real_words` is off."""
        return self.real_words().speller(request.writer_texts) if request.decode.real_words else None

    def real_words(self) -> RealWordVocabulary:
        """This model's real words: the bundle's training words (`words.txt`) and the word list (built once)."""
        if self._real_words is None:
            self.use_training_words(read_bundle_words(self.bundle_path))
        assert self._real_words is not None
        return self._real_words

    def use_training_words(self, training: frozenset[str] | None) -> None:
        """Take `training` as the bundle's training words (`variorum eval` rebuilds them from the files)."""
        self._real_words = self._real_word_vocabulary(training)

    @property
    @abstractmethod
    def bundle_path(self) -> Path:
        """The loaded bundle's directory."""

    @abstractmethod
    def _real_word_vocabulary(self, training: frozenset[str] | None) -> RealWordVocabulary:
        """The real words with these training words, in the form the model writes (engine/word_sources.py)."""

    @abstractmethod
    def group_names(self) -> list[str]:
        """Labels of the head's sampling groups (POS tags, frequency classes, …) for colouring tokens."""

    @abstractmethod
    def token_counts(self) -> list[int]:
        """Training-set count of every token id (the frequency classes the app colours by)."""
