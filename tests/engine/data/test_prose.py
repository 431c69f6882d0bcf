"""Gutenberg prose readers: paragraphs of wrapped text, detokenized runs of PTB sentences."""

from __future__ import annotations

from pathlib import Path

from engine.data.corpus import read_corpus
from engine.data.prose import detokenize_ptb

WRAPPED = """Produced by a volunteer

CHAPTER I.

Emma Woodhouse, handsome, clever, and rich, with a comfortable home
and happy disposition, seemed to unite some of the best blessings.

"Poor Miss Taylor!--I wish she were here again."

ETYMOLOGY.
"""

TOKENIZED = """[ Alice 's Adventures in Wonderland by Lewis Carroll 1865 ]
CHAPTER I. Down the Rabbit-Hole
` What is the use of a book , ' thought Alice ` without pictures ?
' So she was considering in her own mind .
`` I' m late , '' said the Rabbit , `` and I did n't know ! ''
THE POOL OF TEARS
It was a dark night .
"""


def test_wrapped_paragraphs_are_joined_and_headings_dropped(tmp_path: Path) -> None:
    book = tmp_path / "gutenberg" / "austen-emma.txt"
    book.parent.mkdir()
    book.write_text(WRAPPED)
    assert read_corpus([book]) == [
        "Emma Woodhouse, handsome, clever, and rich, with a comfortable home and happy disposition, seemed to "
        "unite some of the best blessings.",
        '"Poor Miss Taylor!--I wish she were here again."',
    ]


def test_tokenized_sentences_are_detokenized_in_runs_that_headings_end(tmp_path: Path) -> None:
    book = tmp_path / "nltk-tokenized" / "carroll-alice.txt"
    book.parent.mkdir()
    book.write_text(TOKENIZED)
    first, second = read_corpus([book])
    assert first == ("'What is the use of a book,' thought Alice 'without pictures?' So she was considering in "
                     "her own mind. \"I'm late,\" said the Rabbit, \"and I didn't know!\"")
    assert second == "It was a dark night."


def test_detokenize_keeps_case_and_joins_clitics() -> None:
    assert detokenize_ptb("It 's o' clock , Mr. Smith ( really ) .") == "It's o'clock, Mr. Smith (really)."
