"""Files whose bytes contradict their byte-order mark open (byte for byte) instead of stopping the app."""

from __future__ import annotations

import codecs
from pathlib import Path

import pytest

from tests.app.conftest import MakeWindow


@pytest.mark.parametrize("data", [codecs.BOM_UTF8 + "café naïf".encode("latin-1"), codecs.BOM_UTF16_LE + b"odd"])
def test_a_byte_order_mark_followed_by_other_bytes_opens_and_saves_unchanged(make_window: MakeWindow,
                                                                             tmp_path: Path, data: bytes) -> None:
    window = make_window(load_model=False, wait_model=False)
    file = tmp_path / "marked.txt"
    file.write_bytes(data)
    editor = window.open_path(file)
    assert editor is not None and editor.toPlainText().endswith(data[-3:].decode("latin-1"))
    editor.document().setModified(True)
    assert window.save_current()
    assert file.read_bytes() == data
