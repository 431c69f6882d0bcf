"""Sentence marks, hierarchical positions (computed by hand) and the order control."""

from __future__ import annotations

import pytest

from engine.loaded_model import OrderError
from engine.permgen.control import OrderControl
from engine.permgen.marks import (
    EOP_ID,
    MarkError,
    begin_id,
    end_id,
    hierarchical_positions,
    mark_target,
    natural_order,
    split_marked,
)
from engine.permgen.model import START_ID

SENTENCES = [[40, 41], [50], [60, 61, 62]]


def test_mark_target_writes_sentences_in_the_order_with_marks() -> None:
    ids = mark_target(SENTENCES, [2, 1, 3])
    assert ids == [begin_id(2), 50, end_id(2), begin_id(1), 40, 41, end_id(1),
                   begin_id(3), 60, 61, 62, end_id(3), EOP_ID]


def test_marking_round_trips_for_every_order() -> None:
    for order in ([1, 2, 3], [3, 1, 2], [2, 3, 1]):
        pieces = split_marked(mark_target(SENTENCES, order))
        assert [t for t, _ in pieces] == order
        assert natural_order(pieces) == SENTENCES


def test_hierarchical_positions_of_a_permuted_target_by_hand() -> None:
    # decoder input for π = [2, 1]: start, <B-2> 50 <E-2>, <B-1> 40 41 <E-1> (then <EOP> is the last target)
    decoder_input = [START_ID, *mark_target(SENTENCES[:2], [2, 1])[:-1]]
    sentence, local = hierarchical_positions(decoder_input)
    assert sentence == [0, 2, 2, 2, 1, 1, 1, 1]
    assert local == [0, 0, 1, 2, 0, 1, 2, 3]
    # the same sentence gets the same positions whatever its place in the order
    _, local_first = hierarchical_positions([START_ID, *mark_target(SENTENCES[:2], [1, 2])[:-1]])
    assert local_first[1:5] == [0, 1, 2, 3]


@pytest.mark.parametrize(
    ("ids", "where"),
    [
        ([40, EOP_ID], "outside any sentence"),
        ([begin_id(1), 40, end_id(1), begin_id(1), end_id(1), EOP_ID], "begins twice"),
        ([begin_id(1), 40, end_id(2), EOP_ID], "inside sentence 1"),
        ([begin_id(1), 40], "not closed"),
        ([begin_id(1), end_id(1), EOP_ID, 40], "after <EOP>"),
    ],
)
def test_split_marked_rejects_malformed_sequences(ids: list[int], where: str) -> None:
    with pytest.raises(MarkError, match=where):
        split_marked(ids)


def test_mark_target_rejects_a_non_permutation() -> None:
    with pytest.raises(MarkError, match="not a permutation"):
        mark_target(SENTENCES, [1, 1, 3])


def test_allowed_marks_follow_the_control() -> None:
    exact = OrderControl(num_sentences=3)
    assert exact.allowed_marks([]) == [begin_id(1), begin_id(2), begin_id(3)]
    assert exact.allowed_marks([2]) == [begin_id(1), begin_id(3)]  # no <EOP> before 3 sentences
    assert exact.allowed_marks([2, 3, 1]) == [EOP_ID]
    paper = OrderControl()  # up to 10, <EOP> after the first sentence
    assert paper.allowed_marks([4]) == [begin_id(t) for t in range(1, 11) if t != 4] + [EOP_ID]
    assert OrderControl(num_sentences=3, order=(3, 1, 2)).allowed_marks([3]) == [begin_id(1)]
    assert OrderControl(num_sentences=3, order=(2,)).allowed_marks([]) == [begin_id(2)]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"num_sentences": 0}, "from 1 to 10"),
        ({"num_sentences": 11}, "from 1 to 10"),
        ({"num_sentences": 3, "order": (4,)}, "from 1 to 3"),
        ({"num_sentences": 3, "order": (1, 1, 2)}, "exactly once"),
        ({"num_sentences": 3, "order": (1, 2)}, "exactly once"),
        ({"order": (2, 1)}, "exactly once"),
    ],
)
def test_bad_order_requests_are_refused(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(OrderError, match=message):
        OrderControl(**kwargs)  # type: ignore[arg-type]
