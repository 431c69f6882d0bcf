"""Over-generate and select through a loaded model: K·N drafts stream as drafts, the N chosen stream again as
the variants, and the choice is the scorer's."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.decoding import DecodeConfig
from engine.front_door import Engine
from engine.loaded_model import GenerationRequest


def _request(drafts: int, n: int = 2, **decode: object) -> GenerationRequest:
    settings = DecodeConfig(**{"seed": 3, "max_new_tokens": 6, "drafts": drafts, **decode})  # type: ignore[arg-type]
    return GenerationRequest(prompt="The dog ran", n=n, decode=settings)


def test_drafts_stream_first_then_the_chosen_variants(tiny_bundle: Path) -> None:
    model = Engine().load(tiny_bundle, device="cpu", runtime="torch")
    stream = model.stream(_request(drafts=3))
    events = list(stream)
    drafts = [e for e in events if e.draft]
    shown = [e for e in events if not e.draft]
    assert {e.variant for e in drafts} == set(range(6))
    assert {e.variant for e in shown} == {0, 1}
    assert len(stream.variants) == 2
    for index, variant in enumerate(stream.variants):
        assert variant.index == index
        assert "".join(e.text_delta for e in shown if e.variant == index) == variant.text
        assert variant.settings["drafts"] == 3
    assert "own sense of fit" in model.selection_note  # no base here: the model's own pmi chose


def test_the_chosen_drafts_are_the_scorers_best(tiny_bundle: Path) -> None:
    """Each chosen variant is one of the drafts, with the seed it was drafted with, and with diversity
    at its default the best-scored draft is shown first."""
    model = Engine().load(tiny_bundle, device="cpu", runtime="torch")
    stream = model.stream(_request(drafts=4, n=1))
    list(stream)
    seeds = {v.seed for v in stream.drafts.variants}  # type: ignore[attr-defined]
    best = max(range(4), key=lambda i: stream.scores[i])  # type: ignore[attr-defined]
    assert stream.variants[0].seed in seeds
    assert stream.variants[0].text == stream.drafts.variants[best].text  # type: ignore[attr-defined]


def test_one_draft_per_variant_is_the_plain_stream(tiny_bundle: Path) -> None:
    model = Engine().load(tiny_bundle, device="cpu", runtime="torch")
    plain = model.stream(_request(drafts=1))
    events = list(plain)
    assert not any(e.draft for e in events)
    assert not hasattr(plain, "drafts")


def test_drafts_do_not_apply_to_a_reworded_paraphrase(tiny_bundle: Path) -> None:
    model = Engine().load(tiny_bundle, device="cpu", runtime="torch")  # a language model paraphrases by rewording
    request = GenerationRequest(prompt="The dog ran home.", n=2, task="paraphrase", decode=DecodeConfig(drafts=2))
    with pytest.raises(ValueError, match="set drafts to 1 for other paraphrases"):
        model.stream(request)


def test_a_stop_while_drafting_chooses_among_what_was_written(tiny_bundle: Path) -> None:
    model = Engine().load(tiny_bundle, device="cpu", runtime="torch")
    seen: list[int] = []
    stream = model.stream(_request(drafts=2, max_new_tokens=40), should_stop=lambda: len(seen) >= 10)
    for event in stream:
        seen.append(event.variant)
    assert len(stream.variants) == 2
    assert all(v.finish_reason == "cancelled" for v in stream.variants)
