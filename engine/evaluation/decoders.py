"""Decoder specs of `variorum eval`: one string per decoder, naming decoding fields by their eval aliases.

A spec is comma-separated parts, in any order: `sample` (sampling, the default) and, for every
decoding field that declares an eval alias (engine/decode_fields, where each alias is declared once):

| field kind | part | e.g. |
|---|---|---|
| switch | the alias alone | `greedy`, `flat` (flat_sampling), `words` (real_words) |
| number | alias=VALUE | `topk=40`, `topp=0.9`, `temp`, `rep`, `ctemp`, `ctopk`, `rarity`, `postopk`, `copy` |
| POS bias | `posbias=NAME:FACTOR`, repeatable | `posbias=adjectives:3` |

e.g. `topp=0.9,rarity=2` or `topk=40,postopk=20,posbias=adjectives:3`. The field names themselves
(`top_k=40`, `class_rarity_bias=2`, `flat_sampling`) work too. A field without an alias says why in its
declaration (`max_new_tokens` and `seed`: the protocol sets them). A value is checked against its
declaration, as the CLI's and the app's are; `check_decoders` refuses, before any decoding, a spec the
bundle's head cannot honour, from the head's capabilities (engine/controls.py) as the CLI and the app.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine.controls import HeadCapabilities
from engine.decode_fields import FIELDS, DecodeField, DecodeSettingError, NotOffered
from engine.decoding.pos_sampling import parse_pos_bias
from engine.decoding.settings import DecodeConfig

SAMPLE = "sample"  # sampling, the default: a part that sets nothing
ALIASES: dict[str, DecodeField[object]] = {f.alias: f for f in FIELDS if not isinstance(f.alias, NotOffered)}
KEYS = {**ALIASES, **{f.name: f for f in ALIASES.values()}}  # what a part may start with


def _part_form(alias: str, field: DecodeField[object]) -> str:
    return alias if field.kind is bool else f"{alias}=NAME:FACTOR" if field.kind is dict else f"{alias}=N"


SPEC_HELP = ("comma-separated parts: " + ", ".join([SAMPLE, *(_part_form(a, f) for a, f in ALIASES.items())])
             + " (engine/evaluation/decoders.py)")


def _number(spec: str, key: str, value: str, field: DecodeField[object]) -> float | int:
    try:
        return int(value) if field.kind is int else float(value)
    except ValueError:
        raise ValueError(f"decoder {spec!r}: {key} needs a number, got {value!r}") from None


def parse_decoder(spec: str, max_new_tokens: int) -> DecodeConfig:
    """A spec (see the module docstring) → DecodeConfig; ValueError naming the bad part."""
    settings: dict[str, Any] = {"max_new_tokens": max_new_tokens}
    typed: dict[str, str] = {}  # field → the key the spec named it by, for messages
    bias: list[str] = []
    for part in filter(None, (p.strip() for p in spec.split(","))):
        key, sep, value = part.partition("=")
        field = KEYS.get(key)
        if part == SAMPLE:
            continue
        if field is None or (field.kind is bool) == bool(sep):  # a switch takes no value, the rest need one
            raise ValueError(f"decoder {spec!r}: unknown part {part!r}; use {sorted([SAMPLE, *ALIASES])} "
                             "(key=value for numbers)")
        typed[field.name] = key if key == field.name else f"{key} ({field.name})"
        if field.kind is bool:
            settings[field.name] = True
        elif field.kind is dict:
            bias.append(value.replace(":", "=", 1))
        else:
            settings[field.name] = _number(spec, key, value, field)
    try:
        if bias:
            settings["pos_bias"] = parse_pos_bias(bias)
        return DecodeConfig(**settings)
    except DecodeSettingError as error:
        raise ValueError(f"decoder {spec!r}: {error.naming(typed.get(error.field, error.field))}") from None


def check_decoders(head: HeadCapabilities, specs: Sequence[str]) -> None:
    """Refuse specs the head cannot honour, from its capabilities as the CLI and the app (ValueError naming the spec):
    a method control of another head, or a POS bias on a tag the model does not have."""
    for spec in specs:
        settings = parse_decoder(spec, 1)
        try:
            head.check(settings.active_fields())
            settings.group_processors(head.pos.tags if head.pos else None)  # resolves POS bias names to the tags
        except ValueError as error:
            raise ValueError(f"decoder {spec!r}: {error}") from None
