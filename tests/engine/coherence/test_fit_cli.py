"""`variorum fit-scorer` end to end on a tiny model: it fits, saves a scorer that loads, reports test accuracy
it did not choose on, and a second run reads its features from the cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.coherence.fit_cli import main
from engine.coherence.scorer import load_scorer

HEADER = ("InputStoryid\tInputSentence1\tInputSentence2\tInputSentence3\tInputSentence4\t"
          "RandomFifthSentenceQuiz1\tRandomFifthSentenceQuiz2\tAnswerRightEnding\n")
NAMES = ["Ann", "Bo", "Cy", "Di", "Ed", "Flo", "Gus", "Hal", "Ivy", "Jo"]


def _cloze(path: Path, count: int) -> Path:
    rows = [f"id{i}\t{n} went out.\tIt rained.\t{n} got wet.\t{n} ran home.\t{n} dried off.\tThe moon sang.\t"
            f"{1 + i % 2}\n" for i, n in enumerate(NAMES[:count])]
    path.write_text(HEADER + "".join(rows), encoding="utf-8")
    return path


def test_fit_scorer_saves_a_scorer_and_caches_features(tmp_path: Path, tiny_bundle: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    val, test = _cloze(tmp_path / "val.tsv", 10), _cloze(tmp_path / "test.tsv", 6)
    out, cache = tmp_path / "scorer", tmp_path / "cache"
    argv = ["--val", str(val), "--test", str(test), "--out", str(out), "--language-model", str(tiny_bundle),
            "--cache-dir", str(cache)]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["val_stories"] == 10 and report["test_stories"] == 6
    assert report["chosen"] in ("scalars", "scalars+hidden", "all")
    assert 0.0 <= report[report["chosen"]]["test"] <= 1.0
    assert len(list(cache.glob("*.pt"))) == 2
    scorer = load_scorer(out, [tiny_bundle.parent])
    assert scorer.record.measured["story_cloze"]["chosen"] == report["chosen"]
    assert len(scorer("Ann went out.", [" She dried off.", " The moon sang."])) == 2
    stamps = {p: p.stat().st_mtime_ns for p in cache.glob("*.pt")}
    assert main(argv) == 0  # the cached features are read, not computed again
    assert {p: p.stat().st_mtime_ns for p in cache.glob("*.pt")} == stamps


def test_a_language_model_folder_that_is_missing_is_one_line(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    val = _cloze(tmp_path / "val.tsv", 10)
    code = main(["--val", str(val), "--test", str(val), "--out", str(tmp_path / "s"), "--language-model",
                 str(tmp_path / "nothing")])
    assert code == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and error[0].startswith("variorum fit-scorer: error:")
