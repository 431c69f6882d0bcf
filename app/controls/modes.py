"""The four writing modes, their input validation and how they become a GenerationRequest.

A mode is usable only when the loaded model's `Capabilities.tasks` lists it AND the engine's
GenerationRequest has every field the mode fills in (so a title or keyword list is never dropped
silently). The request field names the app uses for the PermGen / paraphrase work:
`title: str`, `keywords: list[str]`, `num_sentences: int`, `sentence_order: list[int] | None`
(None = the model's choice, [k] = start with sentence k, a full permutation = that order).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from engine.controls import Capabilities
from engine.front_door import DecodeConfig, GenerationRequest

MODES = ("continue", "story", "abstract", "paraphrase")
MODE_LABELS = {"continue": "Continue", "story": "Story", "abstract": "Abstract", "paraphrase": "Paraphrase"}
ORDER_CHOICES = ("model", "first", "full")  # model's choice / a given first sentence / a full order
MAX_SENTENCES = 10  # the sentence boxes' limit until a PermGen model says its own
PROMPT_CHARS = 4000  # Continue uses at most this much text before the cursor (the model sees less anyway)

NEEDED_FIELDS = {
    "continue": ("prompt",),
    "story": ("title", "keywords", "num_sentences", "sentence_order"),
    "abstract": ("title", "keywords", "num_sentences", "sentence_order"),
    "paraphrase": ("prompt",),
}


class ModeError(ValueError):
    """The writer's input cannot be used for this mode; the message says what to do."""


@dataclass
class ModeInputs:
    """Everything a mode may read from the window."""

    text_before_cursor: str = ""
    selection: str = ""
    title: str = ""
    keywords: str = ""  # comma-separated, as typed
    num_sentences: int = 5
    order: str = "model"
    first_sentence: int = 1
    full_order: str = ""  # e.g. "3, 1, 2, 5, 4"
    document: str = ""  # the whole document: its words count as real words
    extra: dict[str, Any] = field(default_factory=dict)


def mode_unavailable_reason(mode: str, capabilities: Capabilities) -> str:
    """Why `mode` cannot be used with this bundle ("" when it can)."""
    tasks = capabilities.tasks
    if mode not in tasks:
        return (f"{MODE_LABELS[mode]} needs a model trained for it; the loaded model can only "
                f"{', '.join(MODE_LABELS.get(t, t) for t in tasks)}.")
    fields = {f.name for f in dataclasses.fields(GenerationRequest)}
    missing = [name for name in NEEDED_FIELDS[mode] if name not in fields]
    if missing:
        return f"{MODE_LABELS[mode]} is not supported by this engine version (request lacks {', '.join(missing)})."
    return ""


def max_sentences(capabilities: Capabilities) -> int:
    """The most sentences a story or abstract may ask for: the loaded PermGen model's limit."""
    return capabilities.paragraph.max_sentences if capabilities.paragraph else MAX_SENTENCES


def parse_keywords(text: str) -> list[str]:
    return [k.strip() for k in text.replace(";", ",").split(",") if k.strip()]


def sentence_order(inputs: ModeInputs) -> list[int] | None:
    """The order control as a list of 1-based sentence numbers (validated), None for model's choice."""
    n = inputs.num_sentences
    if inputs.order == "model":
        return None
    if inputs.order == "first":
        if not 1 <= inputs.first_sentence <= n:
            raise ModeError(f"The first sentence must be a number from 1 to {n}.")
        return [inputs.first_sentence]
    if inputs.order == "full":
        try:
            order = [int(part) for part in inputs.full_order.replace(",", " ").split()]
        except ValueError:
            raise ModeError("Write the sentence order as numbers, e.g. 2, 1, 3, 5, 4.") from None
        if sorted(order) != list(range(1, n + 1)):
            raise ModeError(f"The full order must use each number from 1 to {n} exactly once.")
        return order
    raise ModeError(f"unknown sentence order {inputs.order!r}; choose one of {ORDER_CHOICES}")


def build_request(
    mode: str, inputs: ModeInputs, n: int, decode: DecodeConfig, capabilities: Capabilities
) -> GenerationRequest:
    """Validate the writer's input for `mode` and build the request; ModeError says what is wrong."""
    if mode not in MODES:
        raise ModeError(f"unknown mode {mode!r}")
    reason = mode_unavailable_reason(mode, capabilities)
    if reason:
        raise ModeError(reason)
    if mode == "continue":
        return GenerationRequest(prompt=inputs.text_before_cursor[-PROMPT_CHARS:], n=n, decode=decode,
                                 document=inputs.document)
    if mode == "paraphrase":
        if not inputs.selection.strip():
            raise ModeError("Select the passage to paraphrase first, then press Generate.")
        # Rewording keeps the passage's sense by construction: there are no drafts to choose among. A paraphrase
        # model on the pretrained base writes the drafts and its meaning floor chooses among them.
        drafts = capabilities.drafts_for(mode, decode.drafts)
        return GenerationRequest(prompt=inputs.selection, n=n, task=mode, decode=decode.replace(drafts=drafts),
                                 document=inputs.document)
    if not inputs.title.strip():
        raise ModeError(f"A {MODE_LABELS[mode].lower()} needs a title: type one in the Title field.")
    most = max_sentences(capabilities)
    if not 1 <= inputs.num_sentences <= most:
        raise ModeError(f"The number of sentences must be from 1 to {most}.")
    kwargs: dict[str, Any] = {
        "title": inputs.title.strip(),
        "keywords": parse_keywords(inputs.keywords),
        "num_sentences": inputs.num_sentences,
        "sentence_order": sentence_order(inputs),
        "document": inputs.document,
    }
    return GenerationRequest(n=n, task=mode, decode=decode, **kwargs)
