"""The desktop build's parts: the app's --smoke-test mode (what packaging/build.sh runs in the built
folder), the .desktop entry and its icon."""

from __future__ import annotations

import configparser
from pathlib import Path

from pytestqt.qtbot import QtBot

from app.main import main

ROOT = Path(__file__).resolve().parents[2]


def test_smoke_test_mode_writes_variants_and_exits_0(qtbot: QtBot) -> None:  # qtbot: the QApplication
    assert main(["--smoke-test"]) == 0


def test_desktop_entry_starts_the_built_app_with_its_icon() -> None:
    entry = configparser.ConfigParser(interpolation=None)
    entry.optionxform = str  # type: ignore[assignment,method-assign]  # keys are case-sensitive
    entry.read(ROOT / "packaging" / "variorum.desktop")
    section = entry["Desktop Entry"]
    assert section["Type"] == "Application" and section["Exec"].split()[0] == "Variorum"
    assert (ROOT / "resources" / "icons" / f"{section['Icon']}.png").is_file()
    assert (ROOT / "resources" / "icons" / f"{section['Icon']}.svg").is_file()


def test_build_script_packs_the_models_and_smoke_tests_the_build() -> None:
    script = (ROOT / "packaging" / "build.sh").read_text()
    assert "resources/models:resources/models" in script
    assert "large_en.msgpack.gz:wordfreq/data" in script  # the real-words word list (engine/word_sources.py)
    assert "dist/Variorum/Variorum --smoke-test" in script
