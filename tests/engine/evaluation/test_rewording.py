"""`variorum eval` of a language model on a paraphrase split: it paraphrases by rewording."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.evaluation.run import main
from engine.rewording import rewording_available
from tests.conftest import STORIES
from tests.engine.evaluation.test_seq2seq import PG_FLAGS, data_root

__all__ = ["data_root"]  # the fixture, shared with the PermGen protocols' tests


@pytest.mark.skipif(not rewording_available(), reason="rewording needs the `pos` extra")
def test_a_language_model_is_scored_on_turkcorpus_like_a_paraphrase_bundle(
        tiny_bundle: Path, data_root: Path, tmp_path: Path) -> None:
    argv = ["--bundles", str(tiny_bundle), "--split", "turkcorpus", "--data-root", str(data_root),
            "--out", str(tmp_path), "--decoders", "topp=0.9", "--train-files", str(STORIES), *PG_FLAGS]
    assert main(argv) == 0
    report = json.loads((tmp_path / "report.json").read_text())
    entry = report["bundles"][0]
    assert report["protocol"] == "paraphrase" and entry["task"] == "paraphrase" and entry["name"] == "tiny"
    metrics = entry["result"]["seq2seq"]["topp=0.9"]
    assert 0 <= metrics["distinct_rewrites"] <= 3 and 0 < metrics["content_words_kept"] <= 1
    assert 0 <= metrics["bleu_4"] <= 1 and metrics["invented_word_rate"] == 0  # WordNet and the writer's words only
    assert "Content kept %" in (tmp_path / "report.md").read_text()


def test_beam_search_is_refused_for_rewording(tiny_bundle: Path, data_root: Path, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--bundles", str(tiny_bundle), "--split", "turkcorpus", "--data-root", str(data_root),
            "--out", str(tmp_path / "x"), "--beam-width", "2", *PG_FLAGS]
    assert main(argv) == 2
    assert "beam search does not apply to rewording" in capsys.readouterr().err
