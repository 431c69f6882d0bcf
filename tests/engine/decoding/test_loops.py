"""A variant stuck repeating a few tokens ends with the stated reason "loop"; writing never trips it."""

from __future__ import annotations

from engine.decoding import DecodeConfig
from engine.decoding.generate import generate_variants
from engine.decoding.loops import FINISH_LOOP, LOOP_MAX_DISTINCT, LOOP_WINDOW, LoopGuard
from engine.model import LanguageModel
from engine.tokenizer import VariorumTokenizer
from tests.conftest import story_lines


def _first_loop(tokens: list[int]) -> int | None:
    guard = LoopGuard(1)
    return next((i + 1 for i, token in enumerate(tokens) if guard.add([token])[0]), None)


def test_a_word_or_a_short_phrase_said_over_and_over_is_a_loop() -> None:
    assert _first_loop([7] * 100) == LOOP_WINDOW
    assert _first_loop([100, 101, 102] + list(range(LOOP_MAX_DISTINCT)) * 20) == 3 + LOOP_WINDOW
    assert _first_loop(list(range(LOOP_MAX_DISTINCT + 1)) * 20) is None


def test_prose_is_never_a_loop(tokenizer: VariorumTokenizer) -> None:
    assert _first_loop(tokenizer.encode(" ".join(story_lines()))) is None


def test_rows_keep_their_own_windows_when_rows_are_dropped() -> None:
    guard = LoopGuard(2)
    for _ in range(LOOP_WINDOW - 1):
        guard.add([5, 6])
    guard.select([1])
    assert guard.add([6]) == [True]


def test_a_greedy_loop_ends_with_its_reason_long_before_the_cap(tiny_model: LanguageModel,
                                                                tokenizer: VariorumTokenizer) -> None:
    variants = generate_variants(tiny_model, tokenizer, "Tom", 2, DecodeConfig(greedy=True, max_new_tokens=4096))
    for variant in variants:
        assert variant.finish_reason == FINISH_LOOP and len(variant.token_ids) < 200
        assert len(set(variant.token_ids[-LOOP_WINDOW:])) <= LOOP_MAX_DISTINCT
