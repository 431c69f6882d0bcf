"""A pane says in plain words why its variant ended, never shows an empty result as a variant, and keeps
its header to one short line with the details in a tooltip; panes grow with their text."""

from __future__ import annotations

from pytestqt.qtbot import QtBot

from app.variants.panel import VariantsPanel
from app.variants.state import VariantState
from tests.app.conftest import MakeWindow
from tests.app.fakes import FakeEngine, FakeModel, writes

LONG_SEED = 1234567890123456789


def _generate(window, qtbot: QtBot) -> None:  # type: ignore[no-untyped-def]
    assert window.generate()
    qtbot.waitUntil(lambda: not window.generator.running, timeout=5000)


def test_each_ending_is_said_in_plain_words(qtbot: QtBot) -> None:
    panel = VariantsPanel()
    qtbot.addWidget(panel)
    reasons = ["eos", "eop", "length", "sentence", "cancelled"]
    panel.show_states([VariantState(text="Tom ran.", finish_reason=r) for r in reasons])
    words = [pane.header.text().split(" · ")[1] for pane in panel.panes]
    assert words == ["ended", "ended", "at length limit", "at length limit", "stopped"]
    assert all("eop" not in pane.header.text() for pane in panel.panes)
    assert "How it ended: the model ended it." in panel.panes[1].header.toolTip()


def test_writers_start_with_end_at_a_sentence_and_can_turn_it_off(make_window: MakeWindow, qtbot: QtBot) -> None:
    model = FakeModel(writes("continue"))
    window = make_window(FakeEngine(model))
    assert window.controls.decode.checks["end_at_sentence"].isChecked()
    _generate(window, qtbot)
    assert model.requests[-1].decode.end_at_sentence
    window.controls.decode.checks["end_at_sentence"].setChecked(False)
    _generate(window, qtbot)
    assert not model.requests[-1].decode.end_at_sentence


def test_an_empty_result_says_the_model_ended_at_once(make_window: MakeWindow, qtbot: QtBot) -> None:
    window = make_window(FakeEngine(FakeModel(writes("continue"), length=0)))
    _generate(window, qtbot)
    pane = window.variants.panes[0]
    assert "ended at once" in pane.header.text()
    assert "ended at once" in pane.text.placeholderText() and "Regenerate" in pane.text.placeholderText()
    assert not pane.buttons["insert"].isEnabled() and not pane.buttons["copy"].isEnabled()
    assert pane.buttons["regenerate"].isEnabled()


def test_the_header_is_one_short_line_with_details_in_its_tooltip(qtbot: QtBot) -> None:
    panel = VariantsPanel()
    qtbot.addWidget(panel)
    panel.resize(520, 700)
    panel.show()
    state = VariantState(text="Tom ran home.", seed=LONG_SEED, log_prob=-107.4, tokens=73, finish_reason="eop",
                         pinned=True)
    panel.show_states([state, VariantState(text="Sara sang.", finish_reason="eos")])
    qtbot.wait(20)
    pane = panel.panes[0]
    assert str(LONG_SEED) not in pane.header.text() and "log p" not in pane.header.text()
    assert pane.header.height() < 2 * pane.header.fontMetrics().lineSpacing()
    assert str(LONG_SEED) in pane.header.toolTip() and "73 word pieces" in pane.header.toolTip()
    assert pane.buttons["pin"].isChecked() and pane.buttons["pin"].y() < pane.text.y()  # the pin is in the header


def test_a_pane_grows_with_its_text_and_the_panel_scrolls(qtbot: QtBot) -> None:
    panel = VariantsPanel()
    qtbot.addWidget(panel)
    panel.resize(300, 500)
    panel.show()
    long_text = " ".join(["Tom walked to the old mill by the river and sat down to rest."] * 12)
    panel.show_states([VariantState(text=long_text, finish_reason="eos") for _ in range(5)])
    qtbot.wait(50)
    pane = panel.panes[0]
    assert pane.text.verticalScrollBar().maximum() == 0  # the pane shows all of its text
    assert pane.text.height() >= pane.text.document().size().height()
    assert panel.scroll_area.verticalScrollBar().maximum() > 0  # the fifth pane is a scroll away, not cut


def test_a_paraphrase_says_how_much_it_left_as_written(qtbot: QtBot) -> None:
    panel = VariantsPanel()
    qtbot.addWidget(panel)
    rates = [[0.0, 0.0], [0.25, 0.0], [0.25, 0.5]]
    texts = ["Tom ran. He won.", "Tom sprinted. He won.", "Tom hurried off. He came first."]
    panel.show_states([VariantState(text=t, finish_reason="done", settings={"sentence_self_wer": r})
                       for t, r in zip(texts, rates, strict=True)])
    notes = [pane.note.text() for pane in panel.panes]
    assert notes[0].startswith("Same as your passage")
    assert notes[1] == "1 of its 2 sentences are as you wrote them."
    assert notes[2] == ""
