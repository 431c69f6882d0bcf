"""The order check asks each source for its own seeded full order and counts the candidates that keep it."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from engine.decoding.settings import DecodeConfig
from engine.evaluation.splits import load_split
from engine.evaluation.story_checks import asked_order, order_followed
from engine.front_door import GenerationRequest
from tests.engine.permgen.conftest import STORIES


@dataclass
class _Candidate:
    order: list[int]
    sentences: dict[int, str]
    finish_reason: str = "eop"


@dataclass
class _Stream:
    variants: list[_Candidate] = field(default_factory=list)

    def __iter__(self) -> Iterator[None]:
        return iter(())


class _HalfObedientModel:
    """Writes each request's asked order whole in its first candidate; the second ends its last sentence early."""

    def __init__(self) -> None:
        self.asked: list[list[int]] = []

    def stream(self, request: GenerationRequest) -> _Stream:
        order = list(request.sentence_order or [])
        self.asked.append(order)
        whole = {t: f"Sentence {t} is here." for t in order}
        return _Stream([_Candidate(order, whole), _Candidate(order, {**whole, order[-1]: "and then"})])


def test_each_source_asks_its_own_seeded_order_and_half_the_candidates_keep_it(tmp_path: Path) -> None:
    stories = tmp_path / "rocstories" / "plan_and_write"
    stories.mkdir(parents=True)
    shutil.copy(STORIES, stories / "ROCStories_all_merge_tokenize.titlesepkeysepstory.test.txt")
    split = load_split("rocstories_story", tmp_path, 0.99)
    model = _HalfObedientModel()
    counted: list[int] = []
    followed = order_followed(model, split, DecodeConfig(), 2, 7, 2, counted.append)  # type: ignore[arg-type]
    assert followed == 0.5 and counted == [1, 1]
    sizes = [len(e.sentences) for e in split.examples[:2]]
    assert model.asked == [asked_order(sizes[0], 7), asked_order(sizes[1], 8)]
    assert sorted(model.asked[0]) == list(range(1, sizes[0] + 1)) and asked_order(5, 3) == asked_order(5, 3)
