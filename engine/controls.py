"""What a writer can ask of the engine, importable without torch: tasks, variants, capabilities.

The command line builds its `--help` from this module and engine/decode_fields alone (so it answers
without loading torch or transformers). Each decoding setting, with its defaults and where a writer
starts, is declared in engine/decode_fields; this module says which heads honour which of them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar

from engine.decode_fields import FIELDS

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
    positions: str  # "hierarchical" or "absolute" decoder positions


@dataclass(frozen=True)
class Capabilities:
    """Which controls a loaded model honours: the CLI, the app and `variorum eval` derive theirs from this.

    `LoadedModel.capabilities` builds it from the head's `HeadCapabilities` and the bundle's tasks
    (and PermGen facts). `controls` are the method-specific DecodeConfig fields (F² class controls,
    POSG's k_POS and bias); `head.check` refuses the others. Sampling controls every model honours
    (temperature, top-k, top-p, repetition penalty, greedy, seed, length, and flat sampling — every
    model can sample from its marginal; a one-group head does nothing else) are not listed.
    `Capabilities()` is a plain softmax language model (what the app assumes before a model loads)."""

    head: HeadCapabilities = HeadCapabilities()
    tasks: tuple[str, ...] = LM_TASKS
    paragraph: ParagraphControls | None = None  # PermGen bundles only

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
