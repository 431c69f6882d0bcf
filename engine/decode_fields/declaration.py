"""What declaring a decoding field takes: its type, bounds, defaults and the surfaces that offer it.

A `DecodeField` says everything about one setting a writer can give (engine/decode_fields/table.py
holds them all); the rest is derived from it: `DecodeConfig`'s defaults and its validation, the
`variorum generate` flags (engine/cli/generate_flags.py), the `variorum eval` decoder aliases
(engine/evaluation/decoders.py), the app's controls (app/controls/spec.py) and which heads honour a
field (engine/controls.py). A surface that does not offer a field says why (`NotOffered`), so a
field is never left out of one by accident (tests/engine/test_decode_fields.py).

No torch here: the command line builds its `--help` from these declarations alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Generic, TypeVar

T_co = TypeVar("T_co", covariant=True)  # a field of ints is a field of objects (the FIELDS table)


class DecodeSettingError(ValueError):
    """A decoding setting has the wrong type or is out of its valid range.

    `field` is the setting's name ("" when the error is about several), and the message reads
    "<field> <problem>", so each surface can name the setting as its user knows it (`naming`)."""

    def __init__(self, message: str, field: str = "", problem: str = "") -> None:
        super().__init__(message)
        self.field = field
        self.problem = problem  # the message after the field's name: "must be in [0.01, 100], got 500"

    def naming(self, name: str) -> str:
        """The message with the setting called `name` (a command-line flag, the app's label)."""
        return f"{name} {self.problem}" if self.field else str(self)


def number_text(value: object) -> str:
    """A number as people write it: 100 not 100.0, 1e-06, every digit of a large integer; other values as str."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if isinstance(value, int) or (math.isfinite(value) and value.is_integer() and abs(value) < 1e15):
        return str(int(value))
    return f"{value:g}"


@dataclass(frozen=True)
class Bounds:
    """The values a number may take: [low, high], (low, high] with `low_open`, or from low up when `high` is None.

    Integer bounds stay integers (a float would round a 63-bit seed bound)."""

    low: float
    high: float | None = None
    low_open: bool = False

    def holds(self, value: float) -> bool:
        """True when `value` lies within (NaN never does)."""
        above = value > self.low if self.low_open else value >= self.low
        return bool(above and (self.high is None or value <= self.high))

    @property
    def upper(self) -> float:
        """`high`, for bounds known to have one."""
        if self.high is None:
            raise ValueError(f"bounds {self.text()} have no upper end")
        return self.high

    def text(self) -> str:
        """"in [0.01, 100]", "in (0, 1]" or ">= 0", as error messages and help texts say it."""
        if self.high is None:
            return f"{'>' if self.low_open else '>='} {number_text(self.low)}"
        return f"in {'(' if self.low_open else '['}{number_text(self.low)}, {number_text(self.high)}]"


@dataclass(frozen=True)
class NotOffered:
    """A surface that leaves a field out, and why (a reader of the declaration should not have to guess)."""

    why: str


@dataclass(frozen=True)
class Flag:
    """The field's `variorum generate` flag. A number takes a value; a switch (bool) turns the field on,
    or off when `negates` (for a field a writer starts with on: `--any-words`); a dict takes NAME=FACTOR items."""

    name: str  # "--top-p"
    help: str  # one line for --help; the bounds and the writer's start are added from the declaration
    negates: bool = False
    metavar: str | None = None

    @property
    def dest(self) -> str:
        """The attribute argparse stores it under: `--top-p` → top_p."""
        return self.name.removeprefix("--").replace("-", "_")


@dataclass(frozen=True)
class Slider:
    """The app's slider for a number: a writer-friendly part of the field's bounds."""

    low: float
    high: float
    says_off: bool = False  # the readout says "off" at the field's off value (top-k 0, top-p 1)
    zones: tuple[tuple[float, str], ...] = ()  # (from this value up, what it does) in rising order


@dataclass(frozen=True)
class Checkbox:
    """The app's checkbox for a switch."""


@dataclass(frozen=True)
class SeedBox:
    """The app's seed box with its "Same variants each time" switch (app/controls/seed_box.py)."""


@dataclass(frozen=True)
class FactorSliders:
    """The app's log-scale sliders, one per coarse POS group of the model, each a factor within the bounds."""


Control = Slider | Checkbox | SeedBox | FactorSliders


@dataclass(frozen=True)
class DecodeField(Generic[T_co]):
    """One decoding setting, declared once; see the module docstring for what is derived from it."""

    name: str  # the DecodeConfig field (`beam_width`: the GenerationRequest field)
    kind: type  # int, float, bool, or dict (pos_bias: a tag or coarse group → a factor within `bounds`)
    off: T_co  # DecodeConfig's default: the control does nothing (max_new_tokens: the length a request gets)
    bounds: Bounds | None  # None for switches
    why: str  # why these bounds, where they are a choice
    label: str  # the writer's name for it: the app's label and accessible name
    help: str  # what it does, in a writer's words: the app's tooltip
    flag: Flag | NotOffered
    alias: str | NotOffered  # the `variorum eval` decoder-spec key
    control: Control | NotOffered  # the app's control
    start: T_co | None = None  # where a writer starts (the CLI, the app) when not at `off`
    method: str = ""  # "f2" / "posg": only heads with those groups honour it (engine/controls.py)
    # (head method, start): where a writer starts on a model whose head has those groups, for a field every
    # head honours but whose right start depends on the stage it acts on (`start_on`)
    method_starts: tuple[tuple[str, T_co], ...] = ()
    # a bundle may say where a writer starts on its model (config.json "decode_starts", engine/controls.py),
    # anywhere the app's slider reaches: a sampling setting whose best value depends on how the model was trained
    bundle_start: bool = False
    off_words: str = ""  # what `off` means, e.g. "off", "no limit"
    optional: bool = False  # None is a value too (seed: None = random)
    request: bool = False  # a GenerationRequest field, not a DecodeConfig one (beam_width)

    @property
    def writer_start(self) -> T_co:
        """The value a writer starts with."""
        return self.off if self.start is None else self.start

    def start_on(self, method: str) -> T_co:
        """Where a writer starts on a model whose head's groups are `method` ("f2", "posg"; "" for none)."""
        return dict(self.method_starts).get(method, self.writer_start)

    @property
    def starts_by_model(self) -> bool:
        """Where a writer starts depends on the loaded model: on its head (`method`, `method_starts`) or on
        what its bundle says (`bundle_start`), so a surface applies the start once the model has loaded."""
        return bool(self.method or self.method_starts or self.bundle_start)

    @property
    def off_note(self) -> str:
        """" (0 = off)", or "" when `off_words` is empty."""
        return f" ({number_text(self.off)} = {self.off_words})" if self.off_words else ""

    def check(self, value: object) -> None:
        """Raise `DecodeSettingError` naming this field, the value and what it may be, unless `value` fits."""
        if value is None and self.optional:
            return
        if not _has_kind(value, self.kind):
            expected = self.kind.__name__ + (" | None" if self.optional else "")
            self._refuse(f"must be of type {expected}, got {value!r} ({type(value).__name__})")
        if self.bounds is not None and isinstance(value, int | float) and not self.bounds.holds(value):
            self._refuse(f"must be {self.bounds.text()}{self.off_note}, got {value}")

    def _refuse(self, problem: str) -> None:
        raise DecodeSettingError(f"{self.name} {problem}", self.name, problem)


def _has_kind(value: object, kind: type) -> bool:
    """bool is no number here (`top_k=True`), and an int is a float but a float is no int."""
    if isinstance(value, bool):
        return kind is bool
    if kind is float:
        return isinstance(value, int | float)
    return isinstance(value, kind)
