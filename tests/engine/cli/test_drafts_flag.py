"""`--drafts` on the command line: a writer starts at 2 where drafts apply, at 1 for beams and for paraphrases
without a meaning floor, and an explicit `--drafts` where it cannot apply is refused rather than dropped."""

from __future__ import annotations

import pytest

from engine.cli.generate_flags import decode_from_flags, fit_to_model
from engine.cli.main import build_parser
from engine.controls import Capabilities, ParagraphControls

CAPABILITIES = Capabilities(tasks=("continue", "paraphrase"))


def _fitted(*flags: str) -> int:
    args = build_parser().parse_args(["generate", *flags])
    return fit_to_model(args, decode_from_flags(args), CAPABILITIES).drafts


def test_drafts_start_at_two_for_continue_and_one_for_paraphrases() -> None:
    assert _fitted() == 2
    assert _fitted("--drafts", "5") == 5
    assert _fitted("--task", "paraphrase") == 1
    assert _fitted("--task", "paraphrase", "--drafts", "1") == 1


def test_explicit_drafts_for_a_paraphrase_are_refused_in_words() -> None:
    with pytest.raises(ValueError, match="does not use --drafts; leave them out"):
        _fitted("--task", "paraphrase", "--drafts", "3")


def test_a_paraphrase_model_with_a_meaning_floor_drafts_like_continue() -> None:
    floored = Capabilities(tasks=("paraphrase",), paragraph=ParagraphControls(10, False, True, "rotary", True))
    args = build_parser().parse_args(["generate", "--task", "paraphrase"])
    assert fit_to_model(args, decode_from_flags(args), floored).drafts == 2
    args = build_parser().parse_args(["generate", "--task", "paraphrase", "--drafts", "3"])
    assert fit_to_model(args, decode_from_flags(args), floored).drafts == 3
