"""Data readers on our own fixture lines (formats of ../shared/data), keywords and display text."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.data.paragraphs import ReaderError
from engine.data.text import detokenize, normalize
from engine.permgen.keywords import storyline, title_keywords
from engine.permgen.readers import read_examples, split_raw_sentences
from engine.permgen.text import format_source
from tests.engine.permgen.conftest import FIXTURES


def test_plan_and_write_reader() -> None:
    examples = read_examples(FIXTURES / "stories.titlesepkeysepstory.txt")
    assert len(examples) == 4
    first = examples[0]
    assert first.title == "the lost kite"
    assert first.keywords == ("anna", "wind", "tree", "climbed", "smiled")
    assert first.sentences[1] == "a strong wind pulled it away ." and len(first.sentences) == 5


def test_plan_and_write_keyword_groups_variant() -> None:
    (example,) = read_examples(FIXTURES / "stories.titlesepkeysepstory.3.1.1.txt")
    assert example.title == "the lost kite"
    assert example.keywords == ("anna", "flew", "wind", "tree", "stuck", "brother", "smiled")
    assert len(example.sentences) == 5


def test_diffusion_lm_reader_splits_normalises_and_extracts_keywords() -> None:
    examples = read_examples(FIXTURES / "roc_valid.json")
    assert [len(e.sentences) for e in examples] == [5, 3]
    assert examples[0].sentences[0] == "tom bought a puppy ."
    assert examples[0].title == "" and len(examples[0].keywords) == 5


def test_story_cloze_reader_takes_the_right_ending() -> None:
    examples = read_examples(FIXTURES / "cloze_test_fixture.tsv")
    assert examples[0].sentences[-1] == "lee was proud of her garden ."
    assert examples[1].sentences[-1] == "jo laughed at himself ."


def test_agenda_reader_fills_entity_placeholders() -> None:
    (example,) = read_examples(FIXTURES / "preprocessed.fixture.tsv")
    assert example.title == "fast parsing with graphs ."
    assert example.keywords == ("graph parser", "dependency trees", "speed")
    assert example.sentences == ("we present a graph parser for dependency trees .",
                                 "it improves speed by a large margin .", "experiments confirm this .")


def test_abstracts_reader_keeps_case_and_extracts_a_storyline(tmp_path: Path) -> None:
    path = tmp_path / "papers.jsonl"
    path.write_text('{"title": "Fast  Parsing", "abstract": "We present GraphParse, a parser. It runs in '
                    'linear time! Experiments on PTB confirm this.", "venue": "x"}\n')
    (example,) = read_examples(path)
    assert example.title == "Fast Parsing"
    assert example.sentences == ("We present GraphParse , a parser .", "It runs in linear time !",
                                 "Experiments on PTB confirm this .")
    assert example.keywords == tuple(storyline([s.lower() for s in example.sentences]))


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("bad.titlesepkeysepstory.txt", "a <EOT> k <EOL> </s> one .\nno marks here\n", ":2: expected"),
        ("bad.titlesepkeysepstory.txt", "a <EOT> k <EOL> text before </s> one .\n", ":1: missing"),
        ("bad.json", '["One. Two."]\n[1, 2]\n', ":2: expected a one-element list"),
        ("bad.json", "{not json\n", ":1: not JSON"),
        ("cloze_test_bad.tsv", "InputStoryid\tInputSentence1\nid\ta\tb\n", ":2: expected 8"),
        ("cloze_test_bad.tsv", "wrong header\n", ":1: expected the Story Cloze header"),
        ("preprocessed.bad.tsv", "t\ta ; b\tx\ty\tuses <method_5> .\tz\n", ":1: placeholder <method_5>"),
        ("preprocessed.bad.tsv", "only\tthree\tfields\n", ":1: expected 6"),
        ("papers.jsonl", '{"title": "t", "abstract": "One."}\n{"title": "t"}\n', ':2: expected an object'),
        ("papers.jsonl", "[1, 2\n", ":1: not a JSON object"),
    ],
)
def test_malformed_lines_are_rejected_with_their_line_number(
    tmp_path: Path, name: str, content: str, message: str
) -> None:
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(ReaderError, match=message):
        read_examples(path)


def test_unknown_file_is_refused(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("some notes\n")
    with pytest.raises(ReaderError, match="unknown data file"):
        read_examples(notes)


def test_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ReaderError, match=r"story_cloze_val\.tsv does not exist"):
        read_examples(tmp_path / "story_cloze_val.tsv")


def test_storyline_takes_one_keyword_per_sentence() -> None:
    sentences = ["the dog ran to the park .", "it was a sunny day .", "the dog chased a red ball ."]
    keywords = storyline(sentences)
    assert len(keywords) == 3 and len(set(keywords)) == 3
    assert keywords[0] in ("dog", "ran", "park") and keywords[2] in ("chased", "red", "ball")
    assert title_keywords("The Pet Bug of the Year") == ["pet", "bug", "year"]


def test_normalise_and_detokenize_round_trip() -> None:
    assert normalize("Tom didn't go, so he's home.") == "tom did n't go , so he 's home ."
    assert detokenize("tom did n't go , so he 's home . i stayed ( alone ) .") == \
        "Tom didn't go, so he's home. I stayed (alone)."
    assert format_source("The Cake", ["Mia", " "]) == "title : the cake keywords : mia"


def test_abbreviations_keep_their_periods_and_start_no_sentence() -> None:
    assert normalize("U.S. sales fell, e.g. at Ford Motor Co. today.", lowercase=False) == \
        "U.S. sales fell , e.g. at Ford Motor Co. today ."
    assert detokenize("mr. smith met dr. jones in the u.s. sales office . he left .") == \
        "Mr. Smith met dr. jones in the u.s. sales office. He left."
    assert normalize("He said no. She left.") == "he said no . she left ."  # a plain word stays a word
    assert split_raw_sentences("The U.S. Army met Dr. Smith. It rained. Then it stopped.") == \
        ["The U.S. Army met Dr. Smith.", "It rained.", "Then it stopped."]
