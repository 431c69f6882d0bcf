"""A recovered autosave names an encoding the document is saved in; one that is not a text codec is not kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.editor.text_file import write_text_file
from app.persistence.autosave import SavedDocument


@pytest.mark.parametrize(("named", "kept"), [("cp1252", "cp1252"), ("utf-16", "utf-16"), ("rot13", "utf-8"),
                                             ("hex", "utf-8"), ("no-such-codec", "utf-8"), (7, "utf-8")])
def test_only_text_codecs_are_kept_and_the_document_saves(tmp_path: Path, named: object, kept: str) -> None:
    saved = SavedDocument.from_json({"doc_id": "d", "title": "t", "path": "", "text": "café", "encoding": named})
    assert saved.encoding == kept
    assert write_text_file(tmp_path / "out.txt", saved.text, saved.encoding) == kept
    assert (tmp_path / "out.txt").read_bytes() == "café".encode(kept)
