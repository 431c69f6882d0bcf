"""Panes speak a writer's language: one wording for the length limit, tooltips without raw numbers or the
engine's names, a paraphrase that kept the passage says so and offers another try, and the same window size
always lays the variants out the same way."""

from __future__ import annotations

from pytestqt.qtbot import QtBot

from app.variants.panel import VariantsPanel
from app.variants.state import VariantState
from engine.decoding.sentence_end import FINISH_SENTENCE
from tests.app.conftest import MakeWindow

UNCHANGED = {"sentence_self_wer": [0.0, 0.0]}


def _panel(qtbot: QtBot, width: int = 520, height: int = 700) -> VariantsPanel:
    panel = VariantsPanel()
    qtbot.addWidget(panel)
    panel.resize(width, height)
    panel.show()
    return panel


def test_the_length_limit_has_one_wording(qtbot: QtBot) -> None:
    panel = _panel(qtbot)
    panel.show_states([VariantState(text="Tom ran.", finish_reason=r) for r in ("length", FINISH_SENTENCE)] * 2)
    panel.update_diversity()  # all four the same: each names the other three, under its header
    qtbot.wait(20)
    words = {pane.header.text().split(" · ")[1] for pane in panel.panes}
    assert words == {"at length limit"}
    assert all(pane.header.height() < 2 * pane.header.fontMetrics().lineSpacing() for pane in panel.panes)
    assert panel.panes[0].note.text() == "≈ Nearly the same as 2, 3 and 4."
    tips = [pane.header.toolTip() for pane in panel.panes]
    assert "maybe in mid-sentence" in tips[0] and "cut back to its last full sentence" in tips[1]


def test_the_header_tooltip_is_in_a_writers_words(qtbot: QtBot) -> None:
    panel = _panel(qtbot)
    settings = {"temperature": 1.0000000000000004, "top_p": 0.8999999999, "top_k": 0, "max_new_tokens": 60,
                "end_at_sentence": True, "seed": 12, "copy_limit": 0, "pos_bias": {"nouns": 1.5}}
    for reason in ("eos", "eop", "length"):
        panel.show_states([VariantState(text="Tom ran home.", seed=12, log_prob=-4.2, tokens=4,
                                        finish_reason=reason, settings=settings)])
        tip = panel.panes[0].header.toolTip()
        for raw in ("1.0000000000000004", "0.8999999999", "log p", "eop", "eos", "Finish reason", "{", "copy_limit"):
            assert raw not in tip, (raw, tip)
        assert "Surprise: 1;" in tip and "Trim unlikely words: 0.9" in tip and "Likeliest words only: off" in tip
        assert "End at a full sentence: on" in tip and "nouns ×1.5" in tip
        assert "average chance of 35%" in tip and "4 word pieces" in tip


def test_an_unchanged_paraphrase_says_so_and_offers_another_try(qtbot: QtBot) -> None:
    panel = _panel(qtbot, width=260)  # one narrow column
    tried = []
    panel.regenerate_requested.connect(tried.append)
    rates = [[0.0, 0.0], [0.25, 0.0], [0.25, 0.5]]
    texts = ["Tom ran. He won.", "Tom sprinted. He won.", "Tom hurried off. He came first."]
    panel.show_states([VariantState(text=t, finish_reason="done", tokens=9, settings={"sentence_self_wer": r})
                       for t, r in zip(texts, rates, strict=True)])
    qtbot.wait(20)
    same, half, changed = panel.panes
    assert "Same as your passage" in same.note.text() and same.again.isVisible()
    assert "1 of its 2 sentences are as you wrote them" in half.note.text() and not half.again.isVisible()
    assert changed.note.isHidden() and changed.again.isHidden()
    for pane in panel.panes:  # the header stays one line, even in a narrow column
        assert "unchanged" not in pane.header.text()
        assert pane.header.height() < 2 * pane.header.fontMetrics().lineSpacing()
    same.again.click()
    assert tried == [same]
    panel.show_states([VariantState(text="Tom ran. He won.", finish_reason="done", settings=UNCHANGED)])
    tip = panel.panes[0].header.toolTip()
    assert "The model wrote no words of its own." in tip and "0 tokens" not in tip


def test_the_same_width_lays_variants_out_the_same_way(qtbot: QtBot) -> None:
    panel = _panel(qtbot, width=100, height=400)
    bar = panel.scroll_area.verticalScrollBar().sizeHint().width()
    frame = 2 * panel.scroll_area.frameWidth()
    margins = panel.layout().contentsMargins()
    # two columns fit only while no scroll bar is shown: the width where the old layout flipped
    panel.resize(2 * 240 + frame + margins.left() + margins.right() + bar // 2, 400)
    qtbot.wait(20)
    long_text = " ".join(["Tom walked to the old mill by the river and sat down to rest."] * 12)
    layouts = []
    for text in ("Tom ran.", long_text, "Tom ran.", long_text):
        panel.show_states([VariantState(text=text, finish_reason="eos") for _ in range(4)])
        layouts.append(panel.columns)
        qtbot.wait(30)
    assert len(set(layouts)) == 1


def test_the_default_window_shows_two_columns_for_every_batch(make_window: MakeWindow, qtbot: QtBot) -> None:
    window = make_window()
    qtbot.wait(20)
    long_text = " ".join(["Tom walked to the old mill by the river and sat down to rest."] * 12)
    for text in ("Tom ran.", long_text, "Tom ran."):
        window.variants.show_states([VariantState(text=text, finish_reason="eos") for _ in range(4)])
        qtbot.wait(30)
        assert window.variants.columns == 2
