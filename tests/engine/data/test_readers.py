"""Plan-and-Write, Brown and WikiText-2 readers: documents, gold tags and file:line errors."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from engine.data.corpus import CorpusError, read_corpus
from engine.data.readers import read_brown_tagged
from tests.engine.permgen.conftest import STORIES

READERS = Path(__file__).parents[2] / "fixtures" / "readers"
BROWN = READERS / "corpus" / "ca01.txt"
WIKI = READERS / "wiki.tiny.tokens.txt"


def test_plan_and_write_stories_are_cased_and_detokenized() -> None:
    documents = read_corpus([STORIES])
    assert len(documents) == 4
    first = documents[0]
    assert first[0].isupper() and " ." not in first and "<EOT>" not in first and "</s>" not in first


def test_brown_text_and_gold_tags() -> None:
    assert read_corpus([BROWN]) == ["The jury said it did find that many of Atlanta's laws were outmoded . "
                                    "It recommended changes ."]
    tagged = read_brown_tagged(BROWN)
    assert tagged[1] == [("It", "pps"), ("recommended", "vbd"), ("changes", "nns"), (".", ".")]
    assert tagged[0][9] == ("Atlanta's", "np$")


def test_wikitext_paragraphs_without_headings_and_joins() -> None:
    assert read_corpus([WIKI]) == ["The tiny lobster is a well-known species , found at 1,000 m .",
                                   "It lives in 3.5 m of water .", "Another text ."]


@pytest.mark.parametrize(("name", "text", "where", "why"), [
    ("corpus/cb01.txt", "\tThe/at jury\n", "cb01.txt:1", "'jury' is not word/tag"),
    ("wiki.bad.tokens.txt", " = A = \n text\n = = B =\n", "wiki.bad.tokens.txt:3", "unbalanced heading"),
    ("x.titlesepkeysepstory.txt", "a title <EOT> k <EOL> </s> one .\nno markers here\n", "story.txt:2", "expected"),
])
def test_malformed_lines_name_file_and_line(tmp_path: Path, name: str, text: str, where: str, why: str) -> None:
    path = tmp_path / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    with pytest.raises(CorpusError, match=why) as error:
        read_corpus([path])
    assert where in str(error.value)


def test_brown_is_recognised_only_in_its_corpus_folder(tmp_path: Path) -> None:
    shutil.copy(BROWN, tmp_path / "ca01.txt")  # an ordinary .txt elsewhere: one document per line
    assert len(read_corpus([tmp_path / "ca01.txt"])) == 2
