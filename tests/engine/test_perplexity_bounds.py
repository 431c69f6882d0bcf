"""`variorum perplexity` answers any file in bounded time with a valid number: NUL bytes and emoji (per-word
perplexity beyond a float → Infinity, not OverflowError), one "word" of 100,000 characters (the tokenizer
only ever sees pieces of MAX_WORD_CHARS), and a held-out set beyond MAX_TOKENS (the first MAX_TOKENS scored)."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import pytest

from engine import perplexity
from engine.perplexity import MAX_WORD_CHARS, encode_documents, main
from engine.tokenizer import VariorumTokenizer
from tests.conftest import story_lines


def _numbers(bundle: Path, text_file: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, float]:
    assert main(["--bundle", str(bundle), "--files", str(text_file), "--all"]) == 0
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    numbers: dict[str, float] = json.loads(out)
    return numbers


@pytest.mark.parametrize("text", ["\0" * 5000, "😀" * 2000])
def test_a_text_of_nul_bytes_or_emoji_gets_an_infinite_per_word_perplexity(
        tiny_bundle: Path, tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "odd.txt").write_text(text + "\n")
    numbers = _numbers(tiny_bundle, tmp_path / "odd.txt", capsys)
    assert numbers["perplexity_per_word"] == math.inf and math.isfinite(numbers["perplexity"])


def test_the_tokenizer_never_sees_a_word_longer_than_the_limit(
        tiny_bundle: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    seen: list[int] = []
    encode_batch = VariorumTokenizer.encode_batch

    def spy(self: VariorumTokenizer, texts: Sequence[str]) -> list[list[int]]:
        seen.extend(len(max(text.split(), key=len, default="")) for text in texts)
        return encode_batch(self, texts)

    monkeypatch.setattr(VariorumTokenizer, "encode_batch", spy)
    (tmp_path / "one-word.txt").write_text("Once " + "x" * 100_000 + " upon a time.\n")
    numbers = _numbers(tiny_bundle, tmp_path / "one-word.txt", capsys)
    assert 0 < max(seen) <= MAX_WORD_CHARS and numbers["tokens"] > 0


def test_text_without_long_runs_is_encoded_exactly_as_by_the_tokenizer(tokenizer: VariorumTokenizer) -> None:
    documents = [*story_lines()[:20], "", "  two  spaces\tand\ttabs  ", "a " * 3000]
    assert encode_documents(tokenizer, documents) == tokenizer.encode_batch(documents)


def test_long_runs_of_letters_or_spaces_are_cut_into_pieces(tokenizer: VariorumTokenizer) -> None:
    text = "Once " + "y" * (2 * MAX_WORD_CHARS + 7) + " " * (MAX_WORD_CHARS + 1) + "end."
    pieces = perplexity._bounded_pieces(text)
    assert "".join(pieces) == text and max(map(len, pieces)) <= MAX_WORD_CHARS
    assert encode_documents(tokenizer, [text]) == [[i for ids in tokenizer.encode_batch(pieces) for i in ids]]


def test_at_most_max_tokens_are_scored(tiny_bundle: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(perplexity, "MAX_TOKENS", 64)
    (tmp_path / "stories.txt").write_text("\n".join(story_lines()) + "\n")
    numbers = _numbers(tiny_bundle, tmp_path / "stories.txt", capsys)
    assert numbers["tokens"] <= 64 < numbers["held_out_tokens"]
