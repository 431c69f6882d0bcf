"""The variants panel's layout (columns that fit, nothing clipped) and its near-identical flag."""

from __future__ import annotations

import tomllib
from pathlib import Path

from pytestqt.qtbot import QtBot

from app.variants.diversity import near_identical, similarity
from app.variants.panel import VariantsPanel
from app.variants.state import VariantState
from tests.app.conftest import MakeWindow

ROOT = Path(__file__).resolve().parents[2]
LONG_SEED = 1234567890123456789  # 19 digits, as random seeds are


def _columns(panel: VariantsPanel) -> int:
    return len({pane.x() for pane in panel.panes})


def _assert_nothing_clipped(panel: VariantsPanel) -> None:
    viewport = panel.scroll_area.viewport()
    for pane in panel.panes:
        right = pane.mapTo(viewport, pane.rect().topRight()).x()
        assert right < viewport.width(), f"pane {pane.number} ends at {right}, viewport is {viewport.width()} wide"
        assert pane.width() >= pane.minimumSizeHint().width()
        assert pane.header.width() >= pane.header.minimumSizeHint().width()
        assert pane.text.horizontalScrollBar().maximum() == 0


def test_panes_sit_side_by_side_fit_the_panel_and_reflow(qtbot: QtBot) -> None:
    panel = VariantsPanel()
    qtbot.addWidget(panel)
    words = " ".join(["a rather long line of variant text that must wrap"] * 3)
    panel.show_states([VariantState(text=words, seed=LONG_SEED + i, tokens=60, finish_reason="length")
                       for i in range(4)])
    panel.show()
    for width, columns in ((560, 2), (1000, 4), (300, 1), (800, 3)):
        panel.resize(width, 700)
        qtbot.waitUntil(lambda c=columns: _columns(panel) == c, timeout=2000)
        qtbot.wait(20)  # let the wrapped headers settle
        _assert_nothing_clipped(panel)


def test_window_shows_a_batch_side_by_side(make_window: MakeWindow, qtbot: QtBot) -> None:
    window = make_window()
    window.resize(1400, 860)
    window.controls.decode.set_values({"n": 4})
    window.generate()
    qtbot.waitUntil(lambda: not window.generator.running, timeout=5000)
    qtbot.wait(20)
    assert _columns(window.variants) >= 2
    _assert_nothing_clipped(window.variants)


def test_near_identical_variants_are_flagged(make_window: MakeWindow) -> None:
    window = make_window()
    texts = ["Tom went to the park and played ball with his dog all day.",
             "Tom went to the park and played ball with his dog all day long.",
             "Sara baked a cake for her mother's birthday party."]
    window.variants.show_states([VariantState(text=t) for t in texts])
    panes = window.variants.panes
    assert [p.near_identical for p in panes] == [[2], [1], []]
    assert panes[0].note.text() == "≈ Nearly the same as 2." and panes[2].note.isHidden()


def test_similarity_measure() -> None:
    assert similarity("a b c", "A b c") == 1.0
    assert similarity("a b c", "d e f") == 0.0
    assert similarity("", "a") == 0.0
    assert near_identical(["one two three four", "one two three four", "five six"]) == [[1], [0], []]


def test_readme_app_command_installs_every_extra_the_app_shows() -> None:
    # optional packages the window shows results of: Self-BLEU (metrics) and POS colouring (pos)
    shown = {"metrics": "sacrebleu", "pos": "spacy"}
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for extra, package in shown.items():
        assert any(requirement.startswith(package) for requirement in extras[extra])
    readme = (ROOT / "README.md").read_text()
    command = next(line for line in readme.splitlines() if "variorum-app" in line and "setup-venv" in line)
    installed = set(command.split("setup-venv", 1)[1].split("&&", 1)[0].strip().split(","))
    assert set(shown) <= installed, command
