"""Restoring names' case in lowercased text from cased text: the table, the restoring, the corpus mix."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.data.corpus import read_corpus
from engine.data.truecase import (
    CASE_FILE,
    CaseTable,
    case_accuracy,
    is_title_case,
    mid_sentence_words,
    restore_lowercased,
    starts_sentence,
)
from tests.engine.permgen.conftest import STORIES


def test_sentence_starts_skip_opening_quotes_and_follow_closing_ones() -> None:
    text = 'Tom went home. "Where is Mary?" he asked.'
    assert [starts_sentence(text, text.index(word)) for word in ("Tom", "went", "Where", "Mary", "he ")] == [
        True, False, True, False, True]
    assert list(mid_sentence_words(text)) == ["went", "home", "is", "Mary", "asked"]


def test_a_word_takes_its_usual_mid_sentence_form() -> None:
    table = CaseTable.learn(["We saw Tom there. We met Tom today.",      # Tom: 2 of 2, capitalised
                             "It rose up. The rose was red. I met Rose.",  # rose: 1 of 3 capitalised
                             "Anna met us. Anna left."])                  # Anna only starts sentences
    assert table.forms == {"tom": "Tom"}


def test_min_count_and_share_decide() -> None:
    texts = ["We met Jo there.", "we met jo there.", "And Jo left."]
    assert CaseTable.learn(texts, min_count=3, min_share=0.5).forms == {"jo": "Jo"}  # 2 of 3 > 0.5
    assert CaseTable.learn(texts, min_count=4).forms == {}
    assert CaseTable.learn(texts, min_count=3, min_share=0.7).forms == {}
    with pytest.raises(ValueError, match="min_count"):
        CaseTable.learn(texts, min_count=0)


def test_restore_touches_only_lowercase_or_sentence_cased_words() -> None:
    table = CaseTable({"tom": "Tom", "mcdonald": "McDonald"})
    assert table.restore("then tom saw Mcdonald and TOM. tom's hat") == "then Tom saw McDonald and TOM. Tom's hat"
    assert CaseTable({}).restore("tom") == "tom"
    initials = CaseTable({"d": "D", "s": "S", "ll": "LL"})  # a cased file's initials ("D. H. Lawrence")
    assert initials.restore("i'd say it's d'arcy's, we’ll see: d. h. lawrence") == (
        "i'd say it's D'arcy's, we’ll see: D. h. lawrence")  # a clitic keeps its case
    with pytest.raises(ValueError, match="not a lowercase word"):
        CaseTable({"Tom": "Tom"})


def test_only_lowercased_documents_are_restored() -> None:
    documents = [("We saw Ben there. We met Ben today.", False), ("ben went home.", True),
                 ("we saw ben.", False)]
    assert restore_lowercased(documents) == ["We saw Ben there. We met Ben today.", "Ben went home.", "we saw ben."]
    assert restore_lowercased([("ben went home.", True)]) == ["ben went home."]  # nothing cased to learn from


def test_plan_and_write_names_take_their_case_from_cased_files(tmp_path: Path) -> None:
    lowercased = tmp_path / "tiny.titlesepkeysepstory.txt"
    lowercased.write_text("a game <EOT> ben sam <EOL> </s> yesterday ben played with sam . </s> sam won .\n",
                          encoding="utf-8")
    cased = tmp_path / "cased.txt"
    cased.write_text("Yesterday Ben and Sam played.\nThen Sam and Ben slept.\n", encoding="utf-8")
    assert read_corpus([lowercased, cased]) == ["Yesterday Ben played with Sam. Sam won.",
                                                "Yesterday Ben and Sam played.", "Then Sam and Ben slept."]
    assert read_corpus([lowercased]) == ["Yesterday ben played with sam. Sam won."]  # nothing cased to learn from
    assert read_corpus([STORIES, cased])[1].startswith("Ben needed new shoes")


def test_case_accuracy_counts_words_and_names() -> None:
    table = CaseTable({"tom": "Tom"})
    result = case_accuracy(["Then Tom and Ann left.", "We met Tom."], table)
    assert result["words"] == 8 and result["capitalised_mid_sentence"] == 3
    assert result["case_right_before"] == pytest.approx(5 / 8)
    assert result["case_right_after"] == pytest.approx(7 / 8)
    assert result["capitalised_restored"] == pytest.approx(2 / 3)


def test_the_writer_names_join_the_table() -> None:
    table = CaseTable({"tom": "Tom"}).with_writer_words("Jenny's Lost Kite", ["Ann", "kite"], ["Then we met Bo."])
    assert table.forms == {"tom": "Tom", "ann": "Ann", "bo": "Bo"}  # a title in title case says nothing
    table = CaseTable({}).with_writer_words("A day with Max", [], [])
    assert table.forms == {"max": "Max"} and is_title_case("The Lost Kite") and not is_title_case("A day with Max")


def test_a_table_round_trips_through_its_file(tmp_path: Path) -> None:
    assert CaseTable.read(tmp_path) is None
    CaseTable({"tom": "Tom"}).write(tmp_path)
    read = CaseTable.read(tmp_path)
    assert read is not None and read.forms == {"tom": "Tom"}
    (tmp_path / CASE_FILE).write_text('{"forms": [1]}', encoding="utf-8")
    with pytest.raises(ValueError, match=r"case\.json"):
        CaseTable.read(tmp_path)


def test_words_of_a_script_without_case_are_left_out_of_the_writer_names() -> None:
    # Hebrew letters are neither upper nor lower case: such a word has no cased form to learn
    table = CaseTable({}).with_writer_words("שלום עולם", ["ירושלים"], ["הוא הלך הביתה. ואז Dana חזר"])
    assert table.forms == {"dana": "Dana"}
