"""Paraphrase work is bounded: a passage over the stated limits is refused, before any parse or model pass, with
a message naming the limit (both paraphrasers), and an unchanged long sentence is scored in linear time."""

from __future__ import annotations

import random
import time
from collections.abc import Sequence

import pytest

from engine.decoding.settings import DecodeConfig
from engine.metrics.paraphrase import word_edit_distance
from engine.model import LanguageModel
from engine.paraphrase.passage import (
    MAX_PASSAGE_CHARS,
    MAX_PASSAGE_SENTENCES,
    MAX_PASSAGE_WORDS,
    PassageTooLongError,
    paraphrase_spans,
)
from engine.paraphrase.variants import score_alternative
from engine.rewording.stream import RewordStream
from engine.tokenizer import VariorumTokenizer

TOO_LONG = {
    "words": "word " * (MAX_PASSAGE_WORDS + 1),
    "characters": "." * (MAX_PASSAGE_CHARS + 1),
    "sentences": "Go. " * (MAX_PASSAGE_SENTENCES + 1),
}


@pytest.mark.parametrize("size", TOO_LONG)
def test_a_passage_over_the_limits_is_refused_with_the_limit_named(size: str) -> None:
    with pytest.raises(PassageTooLongError, match=f"at most {MAX_PASSAGE_WORDS:,} words .* select a part of it"):
        paraphrase_spans(TOO_LONG[size])


def test_rewording_refuses_a_long_passage_before_loading_anything(
        tiny_model: LanguageModel, tokenizer: VariorumTokenizer, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_parser() -> None:
        raise AssertionError("the parser was loaded for a passage that is refused")

    monkeypatch.setattr("engine.rewording.stream.english_parser", no_parser)
    passage = "The dog ran home. " * 1200  # 4,800 words
    with pytest.raises(PassageTooLongError, match="has 4,800 words"):
        RewordStream(tiny_model, tokenizer, passage, 4, DecodeConfig(seed=1))


def test_a_passage_within_the_limits_is_split_as_before() -> None:
    assert paraphrase_spans("One. Two!\n\nThree?") == [(0, 4), (5, 9), (11, 17)]
    with pytest.raises(ValueError, match="empty"):
        paraphrase_spans("  \n ")


def _full_table(source: Sequence[str], output: Sequence[str]) -> int:
    """The textbook edit distance table, to check the trimmed one against."""
    table = [[i + j if i * j == 0 else 0 for j in range(len(output) + 1)] for i in range(len(source) + 1)]
    for i in range(1, len(source) + 1):
        for j in range(1, len(output) + 1):
            table[i][j] = min(table[i - 1][j] + 1, table[i][j - 1] + 1,
                              table[i - 1][j - 1] + (source[i - 1] != output[j - 1]))
    return table[-1][-1]


def test_word_edit_distance_is_exact() -> None:
    rng = random.Random(0)
    for _ in range(300):
        source = [rng.choice("abc") for _ in range(rng.randrange(8))]
        output = [rng.choice("abc") for _ in range(rng.randrange(8))]
        assert word_edit_distance(source, output) == _full_table(source, output), (source, output)


def test_an_unchanged_sentence_of_5000_dots_is_scored_at_once() -> None:
    began = time.perf_counter()
    kept = score_alternative("." * 5000, "")
    assert kept.kept_source and kept.self_wer == 0.0
    assert time.perf_counter() - began < 5  # the full table: 25 million cells, minutes on a busy CPU
