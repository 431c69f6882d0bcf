"""The app's length cap is one a writer waits for, and a variant stopped in a loop says so."""

from __future__ import annotations

from app.controls.spec import SAMPLING
from app.variants.endings import ENDINGS
from engine.decoding.loops import FINISH_LOOP


def test_the_length_slider_stops_at_500_tokens() -> None:
    length = next(s for s in SAMPLING if s.field == "max_new_tokens")
    assert length.maximum == 500


def test_a_loop_is_named_in_the_pane_status() -> None:
    assert ENDINGS[FINISH_LOOP] == "stopped repeating itself"
