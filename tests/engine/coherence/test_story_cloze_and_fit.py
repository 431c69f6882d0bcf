"""The Story Cloze reader and the pairwise fit: right rows read, malformed files refused, a learnable
preference learned and measured."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from engine.coherence.fit import LinearScore, fit_pairs, fit_with_cv, pair_accuracy
from engine.coherence.story_cloze import StoryClozeError, pair_texts, read_story_cloze

HEADER = ("InputStoryid\tInputSentence1\tInputSentence2\tInputSentence3\tInputSentence4\t"
          "RandomFifthSentenceQuiz1\tRandomFifthSentenceQuiz2\tAnswerRightEnding\n")


def _write(tmp_path: Path, rows: list[str]) -> Path:
    path = tmp_path / "cloze.tsv"
    path.write_text(HEADER + "".join(rows), encoding="utf-8")
    return path


def test_stories_and_their_right_endings_are_read(tmp_path: Path) -> None:
    path = _write(tmp_path, [
        "x1\tA went out.\tIt rained.\tA got wet.\tA ran home.\tA dried off.\tA loved rain.\t1\n",
        "x2\tB cooked.\tB burned it.\tB cried.\tB ordered pizza.\tB ate well.\tB hated food.\t2\n",
    ])
    stories = read_story_cloze(path)
    assert [s.right for s in stories] == [0, 1]
    assert stories[0].context == "A went out. It rained. A got wet. A ran home."
    prompts, continuations = pair_texts(stories)
    assert prompts[2] == prompts[3] == stories[1].context
    assert continuations[:2] == [" A dried off.", " A loved rain."]


@pytest.mark.parametrize("rows, problem", [
    (["x\ta\tb\tc\td\te\tf\t3\n"], "line 2: AnswerRightEnding must be 1 or 2"),
    ([], "no stories"),
])
def test_malformed_files_are_refused_with_the_line(tmp_path: Path, rows: list[str], problem: str) -> None:
    with pytest.raises(StoryClozeError, match=problem):
        read_story_cloze(_write(tmp_path, rows))


def test_a_file_without_the_columns_is_not_a_story_cloze_file(tmp_path: Path) -> None:
    path = tmp_path / "other.tsv"
    path.write_text("a\tb\n1\t2\n", encoding="utf-8")
    with pytest.raises(StoryClozeError, match="no column InputSentence1"):
        read_story_cloze(path)


def _pairs(count: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Pairs where only column 0 tells the better row (by 1 on average), amid noise columns."""
    generator = torch.Generator().manual_seed(seed)
    worse = torch.randn(count, 6, generator=generator)
    better = worse + torch.randn(count, 6, generator=generator) * 0.5
    better[:, 0] += 1.0
    return better, worse


def test_the_fit_learns_which_column_matters_and_generalises() -> None:
    better, worse = _pairs(400, 0)
    score, report = fit_with_cv(better, worse)
    assert set(report.cv_accuracy) and report.l2 in report.cv_accuracy
    assert int(score.weights.abs().argmax()) == 0
    held_better, held_worse = _pairs(400, 1)
    assert pair_accuracy(score, held_better, held_worse) > 0.9


def test_a_linear_score_standardises_before_weighing() -> None:
    score = LinearScore(torch.tensor([1.0, 0.0]), torch.tensor([2.0, 1.0]), torch.tensor([1.0, -1.0]))
    assert score(torch.tensor([[3.0, 1.0]])).tolist() == [0.0]  # (3 − 1) / 2 − 1


def test_swapping_every_pair_flips_the_weights() -> None:
    better, worse = _pairs(200, 2)
    forward, backward = fit_pairs(better, worse, 0.01), fit_pairs(worse, better, 0.01)
    assert torch.allclose(forward.weights, -backward.weights, atol=1e-4)


def test_too_few_pairs_are_refused() -> None:
    with pytest.raises(ValueError, match="at least 5 pairs"):
        fit_with_cv(torch.zeros(3, 2), torch.zeros(3, 2))
