"""The copy limit's rule by hand: which next tokens would extend a copied run of the source."""

from __future__ import annotations

import pytest
import torch

from engine.decoding.copy_limit import MAX_COPY_LIMIT, CopyLimit
from engine.decoding.processors import DecodeSettingError
from engine.decoding.settings import DecodeConfig

SOURCE = [5, 6, 7, 5, 6, 8]


def test_followers_of_each_run_by_hand() -> None:
    pairs = CopyLimit(SOURCE, 2)  # runs of 2 source tokens and what follows them in the source
    assert pairs.forbidden([1, 5, 6]) == {7, 8}  # "5 6" is followed by 7 and by 8
    assert pairs.forbidden([6, 7]) == {5}
    assert pairs.forbidden([6, 8]) == set()  # the source ends after "6 8"
    assert pairs.forbidden([6]) == set()  # too short to be a run of 2
    assert CopyLimit(SOURCE, 1).forbidden([5]) == {6}
    assert CopyLimit(SOURCE, 6).forbidden(SOURCE) == set()  # no run longer than the source


def test_mask_clears_only_the_forbidden_tokens_of_each_row() -> None:
    allowed = torch.ones(3, 10, dtype=torch.bool)
    masked = CopyLimit(SOURCE, 2).mask(allowed, [[5, 6], [7], [6, 7]])
    assert allowed.all()  # the caller's mask is left as it was
    assert torch.equal(~masked[0], torch.isin(torch.arange(10), torch.tensor([7, 8])))
    assert masked[1].all()
    assert torch.equal(~masked[2], torch.arange(10) == 5)


@pytest.mark.parametrize("limit", [0, -1, MAX_COPY_LIMIT + 1, 1.5, True])
def test_a_limit_outside_its_range_is_refused(limit: object) -> None:
    with pytest.raises(ValueError, match="copy limit"):
        CopyLimit(SOURCE, limit)  # type: ignore[arg-type]


def test_decode_config_checks_the_copy_limit() -> None:
    assert DecodeConfig(copy_limit=3).copy_limit == 3 and DecodeConfig().copy_limit == 0
    with pytest.raises(DecodeSettingError, match="copy_limit"):
        DecodeConfig(copy_limit=MAX_COPY_LIMIT + 1)
