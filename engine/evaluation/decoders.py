"""Decoder specs of `variorum eval`: one string per decoder, every `DecodeConfig` field the app honours.

A spec is comma-separated parts (order does not matter):

| part | DecodeConfig field | heads |
|---|---|---|
| `greedy` / `sample` | greedy (argmax) / sampling (the default) | any |
| `topk=K`, `topp=P`, `temp=T`, `rep=R` | top_k, top_p, temperature, repetition_penalty | any |
| `flat` | flat_sampling (F² Table 3 / POSG Table 7 ablation: token from the marginal) | any |
| `words` | real_words (every word a real word, engine/decoding/real_words.py) | any |
| `copy=K` | copy_limit (no run of more than K source tokens, engine/decoding/copy_limit.py) | paraphrase |
| `ctemp=T`, `ctopk=K`, `rarity=B` | class_temperature, class_top_k, class_rarity_bias | F² |
| `postopk=K`, `posbias=NAME:FACTOR` (repeatable) | pos_top_k, pos_bias | POSG |

e.g. `topp=0.9,rarity=2` or `topk=40,postopk=20,posbias=adjectives:3`. The field names
themselves (`top_k=40`, `class_rarity_bias=2`, …) work too. `max_new_tokens` and `seed` are
set by the protocol. `check_decoders` refuses, before any decoding, a spec the bundle's head
cannot honour, from the head's capabilities (engine/controls.py) as the CLI and the app.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine.controls import HeadCapabilities
from engine.decoding.pos_sampling import parse_pos_bias
from engine.decoding.processors import DecodeSettingError
from engine.decoding.settings import DecodeConfig

ALIASES = {
    "topk": "top_k", "topp": "top_p", "temp": "temperature", "rep": "repetition_penalty",
    "ctemp": "class_temperature", "ctopk": "class_top_k", "rarity": "class_rarity_bias", "postopk": "pos_top_k",
    "copy": "copy_limit",
}
INT_FIELDS = ("top_k", "class_top_k", "pos_top_k", "copy_limit")
NUMBER_FIELDS = (*INT_FIELDS, "top_p", "temperature", "repetition_penalty", "class_temperature",
                 "class_rarity_bias")
FLAGS = {"greedy": "greedy", "flat": "flat_sampling", "words": "real_words"}


def _number(spec: str, key: str, value: str, field: str) -> float | int:
    try:
        return int(value) if field in INT_FIELDS else float(value)
    except ValueError:
        raise ValueError(f"decoder {spec!r}: {key} needs a number, got {value!r}") from None


def parse_decoder(spec: str, max_new_tokens: int) -> DecodeConfig:
    """A spec (see the module table) → DecodeConfig; ValueError naming the bad part."""
    settings: dict[str, Any] = {"max_new_tokens": max_new_tokens}
    bias: list[str] = []
    for part in filter(None, (p.strip() for p in spec.split(","))):
        key, sep, value = part.partition("=")
        field = ALIASES.get(key, key)
        if not sep and part in FLAGS:
            settings[FLAGS[part]] = True
        elif not sep and part == "sample":
            continue
        elif sep and key in ("posbias", "pos_bias"):
            bias.append(value.replace(":", "=", 1))
        elif sep and field in NUMBER_FIELDS:
            settings[field] = _number(spec, key, value, field)
        else:
            known = sorted([*FLAGS, "sample", "posbias", *ALIASES])
            raise ValueError(f"decoder {spec!r}: unknown part {part!r}; use {known} (key=value for numbers)")
    try:
        if bias:
            settings["pos_bias"] = parse_pos_bias(bias)
        return DecodeConfig(**settings)
    except DecodeSettingError as error:
        raise ValueError(f"decoder {spec!r}: {error}") from None


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
