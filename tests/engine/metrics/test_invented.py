"""Invented-word rate: hand-computed on tiny texts, and rebuilt training word sets from provenance."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.bundles.words import lm_training_words
from engine.cli import main as cli_main
from engine.metrics.invented import invented_word_rate, word_rates, word_set, words, words_after
from engine.permgen.data import permgen_training_words
from tests.engine.evaluation.conftest import TINY_SPLIT
from tests.engine.permgen.conftest import STORIES


def test_words_are_case_folded_letter_runs() -> None:
    assert words("Don't stop-2 the Café!") == ["don", "t", "stop", "the", "café"]


def test_rate_by_hand() -> None:
    vocabulary = word_set(["The cat sat.", "Don't!"])  # {the, cat, sat, don, t}
    # generated words: the dog sat | cat cat zorp (42 is no word) → 6 words, 2 unseen (dog, zorp)
    assert invented_word_rate(["The dog sat", "cat-cat 42 zorp"], vocabulary) == pytest.approx(2 / 6)
    assert invented_word_rate(["12 !!"], vocabulary) == 0.0


def test_lm_training_words_use_the_training_side_only(tmp_path: Path) -> None:
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n\n".join(f"doc{i} word{chr(97 + i)}" for i in range(20)) + "\n")
    everything = lm_training_words({"train": {"train_files": [str(corpus)], "valid_fraction": 0.0}})
    assert everything is not None and {f"word{chr(97 + i)}" for i in range(20)} <= everything | {"doc"}
    split = lm_training_words({"train": {"train_files": [str(corpus)], "valid_fraction": 0.5}})
    assert split is not None and 0 < len(split) < len(everything)  # held-out documents' words are left out
    assert lm_training_words({"train": {}}) is None
    assert lm_training_words({"train": {"train_files": [str(tmp_path / "gone.txt")]}}) is None  # noted, left out
    with pytest.raises(ValueError, match=r"training file .*missing\.txt does not exist"):
        lm_training_words({"train": {}}, [tmp_path / "missing.txt"])


def test_permgen_training_words_are_normalised() -> None:
    vocabulary = permgen_training_words({"train": {"train_files": [str(STORIES)], "valid_fraction": 0.0}},
                                        "story", True)
    assert vocabulary is not None and all(w == w.lower() for w in vocabulary)


def test_eval_report_has_the_rates_with_real_words_off_and_on(tiny_bundle: Path, tmp_path: Path) -> None:
    out = tmp_path / "report"
    argv = ["eval", "--bundles", str(tiny_bundle), "--split-file", str(TINY_SPLIT), "--out", str(out),
            "--prefix-len", "8", "--continuation-len", "12", "--max-windows", "4", "--decoders", "sample",
            "sample,words", "--nmst-windows", "1", "--nmst-max-length", "8", "--nmst-lengths", "8",
            "--train-files", str(TINY_SPLIT)]
    assert cli_main(argv) == 0
    report = json.loads((out / "report.json").read_text())
    off, on = (report["bundles"][0]["result"]["lm"][spec] for spec in ("sample", "sample,words"))
    assert on["invented_word_rate"] < off["invented_word_rate"]  # the untrained model invents; with words, hardly
    assert off["invented_word_rate"] <= off["unseen_word_rate"]  # real words include every training word
    assert "Invented %" in (out / "report.md").read_text() and "Unseen %" in (out / "report.md").read_text()


def test_words_are_read_after_their_prompt() -> None:
    assert words_after("to le", "arn. Then") == ["learn", "then"]
    assert words_after("to le ", "arn") == ["arn"]
    assert invented_word_rate(["arn it"], frozenset({"learn"}), ["le"]) == pytest.approx(1 / 2)
    rates = word_rates(["arn it"], {"learn", "it"}, {"it"}, ["le"])
    assert rates == {"invented_word_rate": 0.0, "unseen_word_rate": 0.5}
