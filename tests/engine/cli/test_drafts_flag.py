"""`--drafts` on the command line: a writer starts at 2 where drafts apply, at 1 for paraphrases and beams, and an
explicit `--drafts` where it cannot apply is refused rather than dropped."""

from __future__ import annotations

import pytest

from engine.cli.generate_flags import decode_from_flags, fit_to_model
from engine.cli.main import build_parser
from engine.controls import Capabilities

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
