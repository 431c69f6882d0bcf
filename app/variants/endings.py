"""How a variant ended and what it is made of, in a writer's words: the engine's finish reasons, seeds and
settings never reach the window as they are."""

from __future__ import annotations

import math
from typing import Any

from app.variants.state import VariantState
from engine.decode_fields import BY_NAME, Checkbox, Slider
from engine.decoding.loops import FINISH_LOOP
from engine.decoding.sentence_end import FINISH_SENTENCE

AT_LIMIT = "at length limit"  # one wording whether or not it was cut back to a full sentence
ENDINGS = {  # the engine's finish reasons (engine/decoding, engine/permgen)
    "eos": "ended",
    "eop": "ended",
    "done": "ended",
    "length": AT_LIMIT,
    FINISH_SENTENCE: AT_LIMIT,
    "cancelled": "stopped",
    FINISH_LOOP: "stopped repeating itself",  # the same few tokens over and over (engine/decoding/loops.py)
}

DETAILS = {"length": "it reached the length limit (Max length), maybe in mid-sentence",
           FINISH_SENTENCE: "it reached the length limit (Max length) and was cut back to its last full sentence",
           "cancelled": "you stopped it",
           FINISH_LOOP: "it was stopped because its last words were the same few over and over"}
SETTINGS_SHOWN = ("max_new_tokens", "temperature", "top_k", "top_p", "repetition_penalty", "class_temperature",
                  "class_top_k", "class_rarity_bias", "pos_top_k", "pos_bias", "real_words", "end_at_sentence",
                  "no_doubled_words", "greedy", "drafts")  # the engine's own (copy limit, beam, flat) stay out


def ending_details(reason: str) -> str:
    """A finish reason explained for the details tooltip."""
    return DETAILS.get(reason, "the model ended it")


def is_empty_result(state: VariantState) -> bool:
    """True when the variant is finished without a word: the model ended it at once."""
    return bool(state.finish_reason) and state.finish_reason != "cancelled" and not state.text.strip()


def ending_words(state: VariantState) -> str:
    """A few plain words for the pane header: writing…, ended, at length limit, stopped, …"""
    if not state.finish_reason:
        return "writing…"
    if is_empty_result(state):
        return "ended at once"
    return ENDINGS.get(state.finish_reason, "ended")


def sentences_kept(state: VariantState) -> tuple[int, int]:
    """For a finished paraphrase, how many of the passage's sentences it left as written, of how many ((0, 0)
    for anything else): the engine's per-sentence Self-WER is 0 for a sentence no rewording was found for."""
    rates = state.settings.get("sentence_self_wer")
    if not isinstance(rates, list) or not rates or not state.finish_reason:
        return 0, 0
    return sum(1 for rate in rates if rate == 0), len(rates)


def unchanged_note(state: VariantState) -> str:
    """A line under the header when a paraphrase kept the writer's wording ("" when it changed every sentence)."""
    kept, total = sentences_kept(state)
    if not kept:
        return ""
    if kept == total:
        return "Same as your passage: no other wording found."
    return f"{kept} of its {total} sentences are as you wrote them."


def twins_note(numbers: list[int]) -> str:
    """"≈ Nearly the same as 2, 3 and 4." for the variants whose words are nearly this one's ("" for none)."""
    if not numbers:
        return ""
    names = [str(n) for n in numbers]
    listed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
    return f"≈ Nearly the same as {listed}."


def likelihood_words(state: VariantState) -> str:
    """How sure the model was of the words it chose, as a chance per word piece."""
    if state.tokens <= 0:  # e.g. a paraphrase that kept the passage: its text is the writer's
        return "The model wrote no words of its own."
    chance = math.exp(state.log_prob / state.tokens)
    pieces = "word piece" if state.tokens == 1 else "word pieces"
    return f"Written in {state.tokens} {pieces}; the model gave each an average chance of {_percent(chance)}."


def settings_words(settings: dict[str, Any]) -> str:
    """The controls a variant was written with, by their labels in the window ("" when none is known)."""
    parts = [f"{BY_NAME[name].label}: {_value_words(name, settings[name])}"
             for name in SETTINGS_SHOWN if name in settings and settings[name] is not None]
    return "; ".join(parts)


def _value_words(name: str, value: Any) -> str:
    if isinstance(BY_NAME[name].control, Checkbox) or isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, dict):
        return ", ".join(f"{kind.replace('_', ' ')} ×{_number(factor)}" for kind, factor in value.items()) or "none"
    control = BY_NAME[name].control
    if isinstance(control, Slider) and control.says_off and value == BY_NAME[name].off:  # as its slider says it
        return "off"
    return _number(value)


def _number(value: Any) -> str:
    """At most three significant digits: 1.0000000000000004 is 1, 0.8999 is 0.9."""
    if isinstance(value, int | float) and math.isfinite(value):
        return f"{float(value):.3g}"
    return str(value)


def _percent(chance: float) -> str:
    return f"{chance:.0%}" if chance >= 0.01 else "under 1%"
