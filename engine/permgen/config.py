"""PermGen model configuration: the decoder's `ModelConfig` plus PermGen's own settings.

The decoder side reuses `engine.config.ModelConfig` (vocab, n_layer = decoder layers, n_head,
n_embd, dropout, head, tie_embeddings, block_size = longest marked target), so any output head
builds exactly as for the language models.

`layout`: "encoder-decoder" (the paper's BART-style model, backbone "bart", engine/permgen/model.py) or
"decoder-only" (a Llama language model reading the source as a prefix, backbone "llama",
engine/permgen/decoder_model.py; docs/permgen-decoder-only.md). Its `block_size` must hold the longest
prefix and target (`max_sequence_len`).

`positions` ("" = the layout's own): "hierarchical" (PermGen, Eq. 4) or "absolute" (plain BART decoder
positions: the seq2seq baseline of the paper's Table 2; use it with `permute=False`) for the
encoder-decoder; "rotary" (the Llama's own sequence positions, the only kind) for the decoder-only
layout. Task "paraphrase" is a
sentence → paraphrase model (engine/permgen/paraphrase.py): its target is one "sentence" ⟨B-1⟩ …
⟨E-1⟩ ⟨EOP⟩, so π-SGD has a single order and hierarchical positions reduce to in-sentence
positions (the marks cost two forced tokens and keep one model, trainer and decoder for all tasks).
A paraphrase model reads the sentence itself, or with `paraphrase_source="content_words"` only its
content words, or with "instruction" the sentence after an instruction to paraphrase it
(engine/permgen/content_words.py). `pair_min_content_kept` / `pair_max_similarity` train
it on the pairs that really rephrase, and `pair_within_floor` on the rewrites its meaning floor would show
(engine/permgen/rephrasings.py). `text_form` "prose" (a decoder-only
model) reads and writes cased prose, its case restored from the `case_from` files'
case table (engine/permgen/text.py); the POS head is left out there, as its tags align with normalised words.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from engine.config import MODEL_SIZE_LIMITS, ConfigError, ModelConfig, check_field_types, config_from_dict
from engine.permgen.content_words import SOURCE_FORMS
from engine.permgen.text import TEXT_FORMS
from engine.tokenizer import MAX_SENTENCES

TASKS = ("story", "abstract", "paraphrase")
LAYOUTS = ("encoder-decoder", "decoder-only")
POSITIONS = ("hierarchical", "absolute", "rotary")
LAYOUT_BACKBONE = {"encoder-decoder": "bart", "decoder-only": "llama"}
SUPPORTED_HEADS = ("softmax", "f2", "posg")  # termination heads end on eos, PermGen ends on ⟨EOP⟩


@dataclass
class PermGenConfig:
    """Shape of a PermGen model (either layout) and how its targets were ordered in training."""

    model: ModelConfig = field(default_factory=lambda: ModelConfig(backbone="bart", n_layer=2, n_embd=128))
    encoder_layers: int = 2
    ffn_dim: int = 0  # 0 = 4 × n_embd
    max_source_len: int = 64  # source (title + keywords) tokens
    max_sentence_len: int = 48  # local positions: ⟨B-t⟩ + tokens + ⟨E-t⟩
    permute: bool = True  # False = the `--no-permute` baseline (natural order only)
    task: str = "story"
    lowercase: bool = True  # sources are lowercased and word-tokenized like the training data
    positions: str = ""  # the layout's own when "": hierarchical; "absolute" = plain BART (Table 2 baseline)
    paraphrase_source: str = "sentence"  # or "content_words" / "instruction": what a paraphrase model reads
    # Paraphrase training pairs kept (rephrasings.py): content kept ≥ the first, word similarity ≤ the second.
    pair_min_content_kept: float = 0.0
    pair_max_similarity: float = 1.0
    pair_within_floor: bool = False  # and, in each direction read, only rewrites the meaning floor would show
    layout: str = "encoder-decoder"  # or "decoder-only": a Llama reading the source as a prefix
    text_form: str = "normalized"  # or "prose": cased prose for a pretrained base (engine/permgen/text.py)
    case_from: list[str] = field(default_factory=list)  # prose: cased files whose case table restores case

    def __post_init__(self) -> None:
        if isinstance(self.model, dict):
            self.model = config_from_dict(ModelConfig, self.model)
        check_field_types(self)
        if self.model.head not in SUPPORTED_HEADS:
            raise ConfigError(f"PermGen supports heads {list(SUPPORTED_HEADS)}, got {self.model.head!r}")
        if getattr(self.model, "termination", "va") != "va":
            raise ConfigError(
                "PermGen paragraphs end with <EOP>, which sentence-based decoding always reaches; an eos "
                f"termination head ({self.model.termination!r}) does not apply to them"
            )
        for name, low, high in (("encoder_layers", 1, MODEL_SIZE_LIMITS["n_layer"]), ("ffn_dim", 0, 1 << 17),
                                ("max_source_len", 1, MODEL_SIZE_LIMITS["block_size"]),
                                ("max_sentence_len", 3, 1 << 12)):  # sentence: marks + a token at least
            if not low <= getattr(self, name) <= high:
                raise ConfigError(f"{name} must be in [{low}, {high}], got {getattr(self, name)}")
        if self.task not in TASKS:
            raise ConfigError(f"task must be one of {list(TASKS)}, got {self.task!r}")
        self._check_layout()
        if self.paraphrase_source not in SOURCE_FORMS:
            raise ConfigError(f"paraphrase_source must be one of {list(SOURCE_FORMS)}, got {self.paraphrase_source!r}")
        if self.paraphrase_source != "sentence" and self.task != "paraphrase":
            raise ConfigError(f"paraphrase_source {self.paraphrase_source!r} is for task 'paraphrase', "
                              f"not {self.task!r}")
        self._check_pair_filter()
        self._check_text_form()

    def _check_text_form(self) -> None:
        if self.text_form not in TEXT_FORMS:
            raise ConfigError(f"text_form must be one of {list(TEXT_FORMS)}, got {self.text_form!r}")
        if self.text_form == "normalized":
            if self.case_from:
                raise ConfigError("case_from restores the case of a text_form \"prose\" model's text; this model "
                                  "reads normalised text")
            return
        if self.layout != "decoder-only" or self.model.head == "posg":
            raise ConfigError(f"text_form \"prose\" is for a decoder-only model on a pretrained base with a softmax "
                              f"or F² head; this one is {self.layout} with a {self.model.head} head")
        if self.task == "paraphrase" and self.paraphrase_source != "instruction":
            raise ConfigError(f"a prose paraphrase model reads its sentence after an instruction: give "
                              f"paraphrase_source \"instruction\", not {self.paraphrase_source!r}")

    def _check_layout(self) -> None:
        """The layout's backbone and positions ("" becomes the layout's own); a decoder-only model's window holds
        the longest prefix and target."""
        if self.layout not in LAYOUTS:
            raise ConfigError(f"layout must be one of {list(LAYOUTS)}, got {self.layout!r}")
        backbone, decoder_only = LAYOUT_BACKBONE[self.layout], self.layout == "decoder-only"
        if self.model.backbone != backbone:
            raise ConfigError(f"PermGen's {self.layout} layout needs the {backbone!r} backbone, got "
                              f"{self.model.backbone!r}")
        self.positions = self.positions or ("rotary" if decoder_only else "hierarchical")
        allowed = ("rotary",) if decoder_only else POSITIONS[:2]
        if self.positions not in allowed:
            raise ConfigError(f"positions must be one of {list(allowed)} in the {self.layout} layout, got "
                              f"{self.positions!r}")
        if decoder_only and self.model.block_size < self.max_sequence_len:
            raise ConfigError(f"the decoder-only layout reads up to {self.max_sequence_len} positions (source, "
                              f"separators and {self.max_sentences} sentences); block_size is {self.model.block_size}")

    def _check_pair_filter(self) -> None:
        for name in ("pair_min_content_kept", "pair_max_similarity"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ConfigError(f"{name} must be in [0, 1], got {getattr(self, name)}")
        if self.filters_pairs and self.task != "paraphrase":
            raise ConfigError(f"pair_min_content_kept / pair_max_similarity / pair_within_floor select paraphrase "
                              f"pairs; task {self.task!r} has none")

    @property
    def filters_pairs(self) -> bool:
        """Whether training keeps only some paraphrase pairs (engine/permgen/rephrasings.py)."""
        return self.pair_min_content_kept > 0.0 or self.pair_max_similarity < 1.0 or self.pair_within_floor

    @property
    def max_sentences(self) -> int:
        return MAX_SENTENCES

    @property
    def max_target_len(self) -> int:
        """Longest decoder input: the start token + T_max marked sentences (⟨EOP⟩ is never an input)."""
        return self.max_sentences * self.max_sentence_len + 1

    @property
    def max_sequence_len(self) -> int:
        """Longest decoder-only input: eos, the source, the start token and the marked target before ⟨EOP⟩."""
        return 1 + self.max_source_len + self.max_target_len

    @property
    def absolute_positions(self) -> int:
        """Rows of the absolute decoder position table (0 = hierarchical positions)."""
        return self.max_target_len if self.positions == "absolute" else 0

    @property
    def feedforward(self) -> int:
        return self.ffn_dim or 4 * self.model.n_embd

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PermGenConfig:
        return config_from_dict(cls, dict(data))
