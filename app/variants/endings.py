"""How a variant ended, in a writer's words (the engine's finish reason stays in the details tooltip)."""

from __future__ import annotations

from app.variants.state import VariantState
from engine.decoding.loops import FINISH_LOOP
from engine.decoding.sentence_end import FINISH_SENTENCE

ENDINGS = {  # the engine's finish reasons (engine/decoding, engine/permgen)
    "eos": "ended",
    "eop": "ended",
    "done": "ended",
    "length": "cut off at limit",  # the length limit, maybe mid-sentence
    FINISH_SENTENCE: "ended at limit",  # cut back to its last full sentence at the length limit
    "cancelled": "stopped",
    FINISH_LOOP: "stopped repeating itself",  # the same few tokens over and over (engine/decoding/loops.py)
}


DETAILS = {"length": "stopped by the length limit", FINISH_SENTENCE: "cut back to its last full sentence at the "
           "length limit", "cancelled": "stopped by the writer",
           FINISH_LOOP: "stopped: its last tokens were the same few over and over"}


def ending_details(reason: str) -> str:
    """A finish reason explained for the details tooltip."""
    return DETAILS.get(reason, "the model ended it")


def is_empty_result(state: VariantState) -> bool:
    """True when the variant is finished without a word: the model ended it at once."""
    return bool(state.finish_reason) and state.finish_reason != "cancelled" and not state.text.strip()


def ending_words(state: VariantState) -> str:
    """A few plain words for the pane header: writing…, ended, cut off at limit, stopped, …"""
    if not state.finish_reason:
        return "writing…"
    if is_empty_result(state):
        return "ended at once"
    return ENDINGS.get(state.finish_reason, "ended")


def unchanged_words(state: VariantState) -> str:
    """For a paraphrase, how many of the passage's sentences it left as written, short enough for the pane
    header ("2/4 unchanged", "unchanged"; "" when it changed every sentence): the engine's per-sentence
    Self-WER is 0 for a sentence no rewording was found for (the tooltip's settings list them)."""
    rates = state.settings.get("sentence_self_wer")
    if not isinstance(rates, list) or not rates or not state.finish_reason:
        return ""
    kept = sum(1 for rate in rates if rate == 0)
    if kept == len(rates):
        return "unchanged"
    return f"{kept}/{len(rates)} unchanged" if kept else ""
