"""Tokenizer: reserved special ids, round trips, counts, save/load."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engine.tokenizer import EOS, SPECIAL_TOKENS, TokenizerError, VariorumTokenizer
from tests.conftest import story_lines


def test_special_tokens_take_the_first_ids(tokenizer: VariorumTokenizer) -> None:
    assert tokenizer.eos_id == 0 and tokenizer.pad_id == 1
    assert [tokenizer.token_text(i) for i in range(len(SPECIAL_TOKENS))] == SPECIAL_TOKENS
    assert tokenizer.vocab_size == 320


@pytest.mark.parametrize("text", ["Mara found a key.", "naïve café 🙂👍🏽 — 東京", "", "  spaced\n\nlines  "])
def test_encode_decode_round_trip(tokenizer: VariorumTokenizer, text: str) -> None:
    assert tokenizer.decode(tokenizer.encode(text)) == text



def test_counts_cover_training_text(tokenizer: VariorumTokenizer) -> None:
    lines = story_lines()
    expected = np.zeros(tokenizer.vocab_size, dtype=np.int64)
    for line in lines:
        for token in tokenizer.encode(line):
            expected[token] += 1
    expected[tokenizer.eos_id] += len(lines)
    assert np.array_equal(tokenizer.counts, expected)
    assert tokenizer.counts.sum() > 1000


def test_save_load_round_trip(tokenizer: VariorumTokenizer, tmp_path: Path) -> None:
    tokenizer.save(tmp_path)
    loaded = VariorumTokenizer.load(tmp_path)
    assert loaded.encode("The bakery closed.") == tokenizer.encode("The bakery closed.")
    assert np.array_equal(loaded.counts, tokenizer.counts)


def test_offsets_index_the_original_text(tokenizer: VariorumTokenizer) -> None:
    text = "Ivy lost a ring 🙂 at sea."
    ids, offsets = tokenizer.encode_with_offsets(text)
    assert len(ids) == len(offsets)
    assert all(0 <= start <= end <= len(text) for start, end in offsets)


def test_too_small_vocabulary_is_refused() -> None:
    with pytest.raises(TokenizerError, match="vocab_size"):
        VariorumTokenizer.train(["a b c"], vocab_size=100)


def test_bad_tokenizer_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "tokenizer.json").write_text("{not json")
    with pytest.raises(TokenizerError, match=r"tokenizer\.json"):
        VariorumTokenizer.load(tmp_path)


def test_eos_constant_matches() -> None:
    assert SPECIAL_TOKENS[0] == EOS
