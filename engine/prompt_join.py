"""Prompts that end in whitespace, as writers usually leave them, and how a variant joins them.

A byte-level BPE tokenizer folds a word's leading space into the word's token ("Ġshe"), so a prompt
ending in " " or "\\n" ends on a lone whitespace token that training text almost never shows before a
word: the model then continues mid-word ("store. " → "fer practting his"). So the prompt is encoded
without its trailing whitespace, and since the writer's own whitespace already separates their text
from what follows, the variant's leading whitespace is dropped: a variant is always exactly the text
to put after the prompt as typed ("store. " + "She posted…", "store." + " She posted…").
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any

from engine.decoding import DecodeConfig, TokenEvent, VariantStream
from engine.decoding.backbone_runner import BackboneRunner
from engine.decoding.real_words import WordSpeller
from engine.model import LanguageModel
from engine.tokenizer import VariorumTokenizer


def follows_space(before: str) -> bool:
    """True when text put after `before` needs no separator of its own (start of text, or whitespace)."""
    return not before or before[-1].isspace()


def fit_after(before: str, text: str) -> str:
    """`text` as it should follow `before`: without leading whitespace where `before` already separates."""
    return text.lstrip() if follows_space(before) else text


class PromptJoinedStream(VariantStream):
    """A VariantStream whose variants start without whitespace when `strip_leading_space` is set.

    Deltas are stripped as they stream (whitespace-only deltas before the first visible character become
    ""), so each variant's final `text` is still exactly its concatenated deltas.
    """

    strip_leading_space = False

    def __iter__(self) -> Iterator[TokenEvent]:
        pending = [self.strip_leading_space] * len(self.variants)  # variant still before its first character
        try:
            for event in super().__iter__():
                if pending[event.variant] and event.text_delta:
                    delta = event.text_delta.lstrip()
                    pending[event.variant] = not delta
                    yield replace(event, text_delta=delta)
                else:
                    yield event
        finally:  # after the stream: the base class diffs each step's decode against the unstripped text
            if self.strip_leading_space:
                for variant in self.variants:
                    variant.text = variant.text.lstrip()

    def _start_partials(self) -> list[str]:
        """After the writer's whitespace a variant starts a new word, whatever the encoded prompt ends with."""
        return [""] * len(self.variants) if self.strip_leading_space else super()._start_partials()


def stream_after_prompt(
    model: LanguageModel,
    tokenizer: VariorumTokenizer,
    prompt: str,
    n: int,
    settings: DecodeConfig,
    should_stop: Callable[[], bool] | None = None,
    runner: BackboneRunner[Any] | None = None,
    words: WordSpeller | None = None,
) -> VariantStream:
    """N variants continuing `prompt`, encoded without its trailing whitespace (module docstring); `words`
    spells the allowed words under `settings.real_words` (engine/decoding/real_words.py)."""
    prompt_ids: Sequence[int] = tokenizer.encode(prompt.rstrip())
    stream = PromptJoinedStream(model, tokenizer, prompt_ids, n, settings, should_stop, runner=runner, words=words)
    stream.strip_leading_space = follows_space(prompt)
    return stream
