"""What a writer can ask of the engine, importable without torch: tasks, variants, capabilities.

The command line builds its `--help` from this module and engine/decode_fields alone (so it answers
without loading torch or transformers). Each decoding setting, with its defaults and where a writer
starts, is declared in engine/decode_fields; this module says which heads honour which of them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar, TypeAlias, TypeVar, cast

from engine.decode_fields import BY_NAME, FIELDS, Bounds, DecodeField, Slider, number_text

T = TypeVar("T")

# what every decoder-only LM bundle does; paraphrase too where rewording is installed (engine/lm/family.py lm_tasks)
LM_TASKS: tuple[str, ...] = ("continue",)
# Paragraph tasks of PermGen encoder-decoder bundles (engine/permgen): sentence-ordered stories and
# abstracts from a title and keywords, and a passage rewritten sentence by sentence.
PARAGRAPH_TASKS: tuple[str, ...] = ("story", "abstract", "paraphrase")
TASKS: tuple[str, ...] = (*LM_TASKS, *PARAGRAPH_TASKS)
MAX_VARIANTS = 8  # variants per request (the app's panel, the CLI's -n, eval's candidates)
DEFAULT_VARIANTS = 3  # where a writer starts: the CLI's -n and the app's box

# ----- capabilities: which controls a loaded model honours ------------------------------------------
# The method-specific fields, as their declarations say (`DecodeField.method`).
CLASS_CONTROLS = tuple(f.name for f in FIELDS if f.method == "f2")  # F² group-stage controls
POS_CONTROLS = tuple(f.name for f in FIELDS if f.method == "posg")  # POSG group-stage controls: k_POS and POS bias


@dataclass(frozen=True)
class ClassGroups:
    """F²: the groups are frequency classes, so class temperature, class top-k and rarity bias act on p(class)."""

    sizes: tuple[int, ...]  # tokens per class, most frequent class first

    method: ClassVar[str] = "f2"  # the `DecodeField.method` of its controls
    controls: ClassVar[tuple[str, ...]] = CLASS_CONTROLS
    needs: ClassVar[str] = "a head with frequency classes (F²)"


@dataclass(frozen=True)
class PosGroups:
    """POSG: the groups are POS tags, so k_POS and a bias per tag or coarse group act on p(tag)."""

    tags: tuple[str, ...]  # the head's groups, in order
    coarse_groups: tuple[str, ...]  # coarse groups (adjectives, nouns, …) with at least one of the tags

    method: ClassVar[str] = "posg"
    controls: ClassVar[tuple[str, ...]] = POS_CONTROLS
    needs: ClassVar[str] = "a POS-guided head (POSG)"


# What each head method's groups are, by `DecodeField.method` ("f2": "a head with frequency classes (F²)").
METHOD_NEEDS: dict[str, str] = {method.method: method.needs for method in (ClassGroups, PosGroups)}
# Every DecodeConfig field that only some heads honour, and what a model needs to honour it.
METHOD_CONTROLS: dict[str, str] = {
    name: method.needs for method in (ClassGroups, PosGroups) for name in method.controls
}


@dataclass(frozen=True)
class Termination:
    """ST / NMST: an end-of-text group whose probability is held at least at 1 − (1 − ε)^t, so every decode ends."""

    kind: str  # "st" (self-terminating) or "nmst" (non-monotonic self-terminating)
    eps: float


@dataclass(frozen=True)
class HeadCapabilities:
    """What an output head's groups are and which group-stage controls act on them (`OutputHead.capabilities`).

    A termination head passes its inner head's classes or tags on and adds `termination`."""

    name: str = "softmax"
    groups: int = 1  # sampling groups, an end-of-text group included
    classes: ClassGroups | None = None
    pos: PosGroups | None = None
    termination: Termination | None = None

    def __post_init__(self) -> None:
        if self.classes is not None and self.pos is not None:
            raise ValueError(f"head {self.name!r}: groups are either frequency classes or POS tags, not both")

    @property
    def controls(self) -> frozenset[str]:
        """The method-specific DecodeConfig fields this head honours."""
        return frozenset(name for method in (self.classes, self.pos) if method is not None for name in method.controls)

    @property
    def method(self) -> str:
        """What the groups are: "f2" (frequency classes), "posg" (POS tags) or "" (one group, or only eos)."""
        groups = self.classes or self.pos
        return "" if groups is None else groups.method

    def refused(self, active: Iterable[str]) -> list[str]:
        """The method controls among `active` (DecodeConfig fields set away from off) this head ignores."""
        return sorted({name for name in active if name in METHOD_CONTROLS and name not in self.controls})

    def check(self, active: Iterable[str]) -> None:
        """Raise ValueError naming the controls among `active` this head would ignore, and what they need."""
        refused = self.refused(active)
        if refused:
            needs = " and ".join(sorted({METHOD_CONTROLS[name] for name in refused}))
            raise ValueError(f"{', '.join(refused)} need(s) {needs}: this {self.name!r} model does not honour "
                             "them. Leave them at their defaults or load a model that has them.")


@dataclass(frozen=True)
class ParagraphControls:
    """PermGen: what a writer controls in a sentence-by-sentence paragraph (engine/permgen)."""

    max_sentences: int
    sentence_order: bool  # the writer may set the number and order of sentences (not for paraphrases)
    permuted_training: bool  # False: a `--no-permute` baseline, which starts every variant alike
    positions: str  # "hierarchical" or "absolute" decoder positions; "rotary" for the decoder-only layout
    # a paraphrase's drafts pass a meaning floor, which chooses among them (a paraphrase model on the pretrained
    # base, engine/permgen/meaning_floor.py)
    meaning_floor: bool = False


def floors_paraphrases(task: str, text_form: str) -> bool:
    """Whether a PermGen model's paraphrases pass the meaning floor (engine/permgen/meaning_floor.py), which chooses
    among drafts: a paraphrase model in prose, on a pretrained base (its config's `task` and `text_form`)."""
    return task == "paraphrase" and text_form == "prose"


# ----- where a writer starts on a model: its bundle's "decode_starts" -------------------------------
# The sampling fields a bundle may start (`DecodeField.bundle_start`): temperature, top-k, top-p, repetition penalty.
BUNDLE_STARTS = tuple(f.name for f in FIELDS if f.bundle_start)
# (field, start) pairs as a bundle's config.json gives them, checked (`read_decode_starts`); a tuple, not a
# dict, so `Capabilities` stays hashable.
DecodeStarts: TypeAlias = tuple[tuple[str, float], ...]


def start_bounds(field: DecodeField[object]) -> Bounds:
    """Where a bundle may start `field`: the app's slider, a writer-friendly part of the field's bounds, so the
    app can show every start the CLI applies (a start beyond the slider would be clamped there)."""
    if not isinstance(field.control, Slider):
        raise ValueError(f"{field.name} has no slider, so no bundle may start it")
    return Bounds(field.control.low, field.control.high)


def read_decode_starts(raw: object) -> DecodeStarts:
    """A bundle's "decode_starts" object ({"temperature": 0.8, "top_k": 40}) checked against the fields'
    declarations; ValueError in one line naming the field and what it may be."""
    allowed = ", ".join(BUNDLE_STARTS)
    if not isinstance(raw, dict):
        raise ValueError(f"must be a JSON object of starts for {allowed}, got {type(raw).__name__}")
    starts: list[tuple[str, float]] = []
    for name, value in raw.items():
        field = BY_NAME.get(name)
        if field is None or not field.bundle_start:
            what = "is not a decoding setting" if field is None else "is not a setting a bundle may start"
            raise ValueError(f"{name!r} {what}; a bundle may start {allowed}")
        bounds, whole = start_bounds(field), field.kind is int
        if (isinstance(value, bool) or not isinstance(value, int | float) or (whole and not isinstance(value, int))
                or not bounds.holds(value)):
            given = number_text(value) if isinstance(value, int | float) else repr(value)
            raise ValueError(f"{name} must be {'a whole number' if whole else 'a number'} {bounds.text()}"
                             f"{field.off_note}, got {given}")
        starts.append((name, value))
    return tuple(starts)


def model_start(field: DecodeField[T], method: str, decode_starts: Iterable[tuple[str, float]]) -> T:
    """Where a writer starts `field` on a model whose head's groups are `method` and whose bundle gives
    `decode_starts`: the bundle's start wins over the head's (`DecodeField.start_on`)."""
    starts = dict(decode_starts)
    if field.name in starts:
        return cast(T, starts[field.name])  # checked against the field when the bundle loaded
    return field.start_on(method)


@dataclass(frozen=True)
class Capabilities:
    """Which controls a loaded model honours: the CLI, the app and `variorum eval` derive theirs from this.

    `LoadedModel.capabilities` builds it from the head's `HeadCapabilities` and the bundle's tasks
    (and PermGen facts). `controls` are the method-specific DecodeConfig fields (F² class controls,
    POSG's k_POS and bias); `head.check` refuses the others. Sampling controls every model honours
    (temperature, top-k, top-p, repetition penalty, greedy, seed, length, and flat sampling — every
    model can sample from its marginal; a one-group head does nothing else) are not listed.
    `decode_starts` are where the bundle says a writer starts on it (`read_decode_starts`; `start_of`).
    `Capabilities()` is a plain softmax language model (what the app assumes before a model loads)."""

    head: HeadCapabilities = HeadCapabilities()
    tasks: tuple[str, ...] = LM_TASKS
    paragraph: ParagraphControls | None = None  # PermGen bundles only
    decode_starts: DecodeStarts = ()  # the bundle's config.json "decode_starts", checked when it loaded

    def start_of(self, field: DecodeField[T], flat: bool = False) -> T:
        """Where a writer starts `field` on this model: its bundle's start, else the field's for this head
        (`DecodeField.start_on`). Flat sampling skips the group stage, so it takes a one-group model's start
        there; a bundle's start holds either way (its maker measured the model with it)."""
        return model_start(field, "" if flat else self.head.method, self.decode_starts)

    def guides(self, task: str) -> bool:
        """Guidance (engine/decoding/guidance.py) acts in `task` on this model: every language model's
        continuations, and every PermGen task; never a language model's paraphrase, which rewords the sentence
        (engine/rewording) rather than sampling a rewrite token by token."""
        return task != "paraphrase" or self.paragraph is not None

    def chooses_drafts(self, task: str) -> bool:
        """Drafts (`decode.drafts` > 1) are written and chosen among in `task`: continuations, stories and abstracts
        on every model (engine/selection); a paraphrase only on a model whose meaning floor keeps the drafts that
        keep the sentence's meaning and chooses among them."""
        return task != "paraphrase" or (self.paragraph is not None and self.paragraph.meaning_floor)

    def drafts_for(self, task: str, drafts: int) -> int:
        """The drafts a sampled request for `task` takes when the writer asks for `drafts`: those, where they are
        chosen among (`chooses_drafts`), else one (what the app and the CLI send)."""
        return drafts if self.chooses_drafts(task) else 1

    @property
    def controls(self) -> frozenset[str]:
        """The method-specific DecodeConfig fields this model honours (checked by `head.check`)."""
        return self.head.controls

    @property
    def pos_guided(self) -> bool:
        """The groups are POS tags (POSG, alone or inside a termination head)."""
        return self.head.pos is not None

    @property
    def beam_search(self) -> bool:
        """Beam search inside sentences (`GenerationRequest.beam_width` > 1): PermGen bundles; an LM samples."""
        return self.paragraph is not None
