"""The engine API for PermGen bundles: a `LoadedModel` that writes stories / abstracts / paraphrases.

`Engine.load` returns this for a bundle whose config says kind "permgen" (engine/permgen/family.py).
Requests name the task the bundle was trained for and give `title`, `keywords` (empty → the
title's content words, engine/permgen/keywords.py), `num_sentences` (1–10; None = the model
decides, up to 10) and `sentence_order` (None = the model's choice, [k] = start with sentence k,
a full permutation = that order). A `--no-permute` baseline bundle starts every candidate with its most likely
sentence instead of distinct ones (it never saw another first sentence in training).
`beam_width` > 1 writes each sentence by beam search (engine/permgen/beam_decode.py).

A paraphrase bundle (task "paraphrase") takes the passage as `prompt` (the app's Paraphrase mode
sends the selection) and returns `ParaphraseVariant`s whose `settings` hold Self-BLEU / Self-WER
against the source (engine/permgen/paraphrase.py); sentence count / order do not apply to it.

Both layouts decode through the same streams (engine/permgen/rows.py makes the rows of each). The
encoder-decoder may run on ONNX Runtime where the bundle was exported; a decoder-only model has no
export and decodes with torch (asked for ONNX by name, it says so in `runtime_note`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

import torch

from engine.bundles.bundle import BundleError, load_typed_bundle
from engine.coherence.choice import choose_scorer
from engine.controls import Capabilities, ParagraphControls, floors_paraphrases
from engine.data.text import normalize
from engine.data.truecase import CaseTable
from engine.decode_fields import GUIDANCE
from engine.decoding.stream import DecodeStream
from engine.loaded_model import GenerationRequest, LoadedModel
from engine.model import LanguageModel
from engine.packed_linear import keep_packed_weights_only
from engine.permgen.beam_decode import BeamPermGenStream
from engine.permgen.bundle import PermGenBundle
from engine.permgen.content_words import paraphrase_source
from engine.permgen.control import OrderControl
from engine.permgen.decode import PermGenStream
from engine.permgen.keywords import title_keywords
from engine.permgen.meaning_floor import MeaningFloor
from engine.permgen.model import START_ID, PermGenModel
from engine.permgen.paraphrase import ParaphraseStream
from engine.permgen.rows import PermGenRunner
from engine.permgen.text import ProseForm, encode_sources, format_source, read_prose_form
from engine.rewording import rewording_available
from engine.rewording.search import Rewording, RewordSettings, SentenceScorer
from engine.rewording.wordnet import WordNet
from engine.selection.stream import ScorerChoice
from engine.tokenizer import END_OF_PARAGRAPH, SENTENCE_BEGIN, SENTENCE_END, SPECIAL_TOKENS, VariorumTokenizer
from engine.word_sources import RealWordVocabulary

# today's Paraphrase without the base: rewording judged by this small language model (docs/paraphrase.md)
REWORDING_MODEL = Path(__file__).resolve().parents[2] / "resources" / "models" / "continue-f2-nmst"
ONNX_RUNTIMES = ("onnx", "onnx-int8")  # asked for by name (auto uses an export only where there is one)
ONLY_TORCH = "a decoder-only PermGen model has no ONNX export"


class PermGenLoadedModel(LoadedModel):
    """A PermGen bundle on a device, ready to write stories, abstracts or paraphrases."""

    runner: PermGenRunner | None = None  # None: the torch backbone itself
    _case: CaseTable | None = None  # the bundle's case table, read at the first request
    floor_rounds: int = MeaningFloor.rounds  # a paraphrase's rounds of drafts at most (engine/permgen/meaning_floor.py)

    def __init__(self, bundle: PermGenBundle, device: torch.device, runtime: str = "torch") -> None:
        """`runtime`: auto / torch / onnx (engine/onnx/runtime.py)."""
        self.permgen = bundle
        self.device = device
        model = bundle.model
        config = model.config
        self.prose: ProseForm | None = read_prose_form(config.task, config.lowercase, config.text_form, bundle.path)
        if runtime in ONNX_RUNTIMES and not isinstance(model, PermGenModel):
            self.runtime_note = f"ONNX Runtime not used, decoding with torch: {ONLY_TORCH}"
        elif runtime != "torch" and isinstance(model, PermGenModel):  # the exported encoder and decoder step
            from engine.onnx.runtime import choose_runtime
            from engine.onnx.seq2seq_runner import OnnxSeq2SeqRunner

            decoder = model.backbone.decoder  # its position checks run before every ONNX step
            choice = choose_runtime(bundle.path, bundle.model.kind, runtime, device,
                                    lambda graphs: OnnxSeq2SeqRunner(graphs, decoder))
            self.runtime, self.runner, self.runtime_note = choice.name, choice.runner, choice.note
        if device.type == "cpu" and not isinstance(model, PermGenModel):  # the decoder-only layout decodes with torch
            keep_packed_weights_only(model, half=True)

    @property
    def capabilities(self) -> Capabilities:
        config = self.permgen.model.config
        paragraph = ParagraphControls(max_sentences=config.max_sentences, sentence_order=config.task != "paraphrase",
                                      permuted_training=config.permute, positions=config.positions,
                                      meaning_floor=floors_paraphrases(config.task, config.text_form))
        return Capabilities(self.permgen.model.head.capabilities(), (config.task,), paragraph,
                            self.permgen.decode_starts)

    def source_text(self, request: GenerationRequest) -> str:
        """The source's text for a request (keywords from the title when none are given); a prose model's
        joiner follows it (`source_ids`)."""
        lowercase = self.permgen.model.config.lowercase
        keywords = list(request.keywords) or title_keywords(normalize(request.title, lowercase))
        if self.prose is not None:
            return self.prose.source(request.title, keywords)
        return format_source(request.title, keywords, lowercase)

    def source_ids(self, request: GenerationRequest) -> list[int]:
        """The source's ids, cut to the model's limit as in training."""
        config = self.permgen.model.config
        return encode_sources(self.permgen.tokenizer, [self.source_text(request)], config.max_source_len,
                              self.prose)[0][0]

    def stream_rows(self, request: GenerationRequest, rows: int,
                    should_stop: Callable[[], bool] | None = None) -> DecodeStream:
        config = self.permgen.model.config
        if request.task != config.task:
            raise ValueError(f"this model writes a {config.task!r}; it cannot do task {request.task!r}")
        model, tokenizer = self.permgen.model, self.permgen.tokenizer
        if config.task == "paraphrase":
            return self._paraphrase(request, should_stop)
        if not request.title.strip() and not request.keywords:
            raise ValueError(f"a {config.task} needs a title or keywords")
        control = OrderControl(request.num_sentences, tuple(request.sentence_order or ()), config.permute)
        source = self.source_ids(request)
        words, case = self.speller(request), self.case_table(request)
        if request.beam_width > 1:
            return BeamPermGenStream(model, tokenizer, source, request.n, request.decode, control, request.beam_width,
                                     should_stop, self.runner, words, case)
        return PermGenStream(model, tokenizer, source, rows, request.decode, control, should_stop, self.runner,
                             words, case=case, unconditioned_ids=self.twin_source(request))

    def twin_source(self, request: GenerationRequest) -> list[int] | None:
        """What guidance's twin rows read for `request`: the source of no text, or None when it is not guided."""
        return self.unconditioned_ids() if request.decode.guidance != GUIDANCE.off else None

    def unconditioned_ids(self) -> list[int]:
        """The source of no text, in the model's own source form, which guidance's twin rows read
        (engine/decoding/guidance.py): an empty title and keywords; for a paraphrase, no sentence (the
        instruction alone, for a model that reads one)."""
        config = self.permgen.model.config
        if self.prose is not None:
            text = self.prose.source("", [])
        elif config.task == "paraphrase":
            text = paraphrase_source("", config.paraphrase_source, config.lowercase)
        else:
            text = format_source("", [], config.lowercase)
        return encode_sources(self.permgen.tokenizer, [text], config.max_source_len, self.prose)[0][0] or [START_ID]

    def case_table(self, request: GenerationRequest) -> CaseTable | None:
        """For a lowercased model, how names are written: the bundle's `case.json` and the writer's own names. None
        for a prose model: it writes cased text itself, which the table would change ("I'd" → "I'D")."""
        if not self.permgen.model.config.lowercase or self.prose is not None:
            return None
        if self._case is None:
            self._case = CaseTable.read(self.permgen.path) or CaseTable({})
        return self._case.with_writer_words(request.title, request.keywords, [request.prompt, request.document])

    def _paraphrase(self, request: GenerationRequest, should_stop: Callable[[], bool] | None) -> ParaphraseStream:
        if not request.prompt.strip():
            raise ValueError("give the passage to paraphrase (the selected text)")
        if request.num_sentences is not None or request.sentence_order:
            raise ValueError("the number and order of sentences do not apply to paraphrases")
        return ParaphraseStream(self.permgen.model, self.permgen.tokenizer, request.prompt, request.n, request.decode,
                                request.beam_width, should_stop, self.runner, self.speller(request), self.prose,
                                self._meaning_floor(request), self.twin_source(request))

    def _meaning_floor(self, request: GenerationRequest) -> MeaningFloor | None:
        """A prose paraphrase model's (on a pretrained base) floor on the meaning kept, with today's rewording filling
        in where its model and WordNet and spaCy are installed (engine/permgen/meaning_floor.py)."""
        config = self.permgen.model.config
        if not floors_paraphrases(config.task, config.text_form):
            return None
        drafts = request.decode.drafts
        judge = rewording_judge(str(self.device)) if rewording_available() else None
        if judge is None:
            return MeaningFloor(lowercase=config.lowercase, drafts_per_variant=drafts, rounds=self.floor_rounds)
        from engine.rewording.stream import english_parser  # it imports the paraphrase stream

        settings = RewordSettings(temperature=request.decode.temperature)
        return MeaningFloor(rewording=Rewording(SentenceScorer(*judge), WordNet(), english_parser(), settings),
                            lowercase=config.lowercase, drafts_per_variant=drafts, rounds=self.floor_rounds)

    def prepare(self, task: str) -> None:
        """A prose paraphrase model: load spaCy's parser, WordNet's files and the judge (seconds) for its rewordings."""
        if task == "paraphrase" and self.prose is not None and rewording_available():
            from engine.rewording.stream import load_rewording

            load_rewording()
            rewording_judge(str(self.device))

    def drafts_scorer(self) -> ScorerChoice:
        """The shipped scorer; without it, drafts are chosen for differing only (engine/coherence/choice.py)."""
        return choose_scorer(None, self.device)

    @property
    def bundle_path(self) -> Path:
        return self.permgen.path

    def _real_word_vocabulary(self, training: frozenset[str] | None) -> RealWordVocabulary:
        """Normalised text (engine/data/text.py), as the model writes it; eos and every mark end a word."""
        tokenizer, lowercase = self.permgen.tokenizer, self.permgen.model.config.lowercase
        return RealWordVocabulary(training, tokenizer.piece_bytes(), permgen_boundary_ids(tokenizer), self.device,
                                  lambda text: normalize(text, lowercase))

    def group_names(self) -> list[str]:
        return self.permgen.model.head.group_names()

    def token_counts(self) -> list[int]:
        return [int(c) for c in self.permgen.tokenizer.counts]


@functools.lru_cache(maxsize=2)
def rewording_judge(device: str, folder: Path = REWORDING_MODEL) -> tuple[LanguageModel, VariorumTokenizer] | None:
    """The model that judges rewordings' fluency, loaded once per process and device; None where it is missing. The
    small model today's Paraphrase uses, not the base: a sentence's rewordings are dozens of whole sentences to score,
    and the paraphrase has two seconds on the CPU."""
    try:
        bundle = load_typed_bundle(folder, device, LanguageModel)
    except BundleError:
        return None
    return bundle.model, bundle.tokenizer


def permgen_boundary_ids(tokenizer: VariorumTokenizer) -> list[int]:
    """The ids that end a word in PermGen's output: eos (its start token), ⟨B-t⟩, ⟨E-t⟩ and ⟨EOP⟩."""
    return [tokenizer.eos_id, *(SPECIAL_TOKENS.index(t) for t in (*SENTENCE_BEGIN, *SENTENCE_END, END_OF_PARAGRAPH))]
