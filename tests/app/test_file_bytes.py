"""A document keeps its file's bytes: open → save without an edit writes the same bytes, and an edit
keeps the encoding, byte-order mark, line breaks and characters the writer did not touch."""

from __future__ import annotations

import codecs
import random
from pathlib import Path

import pytest
from pytestqt.qtbot import QtBot

from app.editor.tabs import DocumentError, DocumentTabs
from app.editor.text_file import LINE_BREAK, PARAGRAPH, decode_bytes, encode_text, file_text
from tests.app.conftest import MakeWindow, leave_as_crashed

SAMPLES = {
    "latin-1 nbsp": b"Prix\xa0: 5\xa0francs\n",
    "utf-8 nbsp": "Prix\u00a0: 5\u00a0francs\n".encode(),
    "crlf": b"one\r\ntwo\r\n",
    "lone cr": b"one\rtwo\r",
    "mixed breaks": b"a\r\nb\rc\nd\n\re",
    "line and paragraph separators": "a\u2028b\u2029c\n".encode(),
    "utf-8 bom": codecs.BOM_UTF8 + "caf\u00e9\r\n".encode(),
    "utf-16 be": codecs.BOM_UTF16_BE + "caf\u00e9\u00a0\r\nfin".encode("utf-16-be"),
    "utf-16 le": codecs.BOM_UTF16_LE + "caf\u00e9\u2028\rfin\n".encode("utf-16-le"),
    "utf-8 bom then latin-1": codecs.BOM_UTF8 + b"caf\xe9",
    "zero-width no-break space first": "\ufeff\ufeffhi\u2029".encode(),
    "no final break": b"last line",
    "empty": b"",
    "controls": b"tab\there\x0bvt\x0cff\x00nul\n",
    "qt frame markers": "a\ufdd0b\ufdd1c\ufdd0\ufdd0d\n".encode(),
}


@pytest.fixture
def tabs(qtbot: QtBot) -> DocumentTabs:
    widget = DocumentTabs()
    qtbot.addWidget(widget)
    return widget


@pytest.mark.parametrize("data", SAMPLES.values(), ids=SAMPLES.keys())
def test_open_then_save_writes_the_same_bytes(tabs: DocumentTabs, tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "f.txt"
    path.write_bytes(data)
    tabs.save(tabs.open_file(path))
    assert path.read_bytes() == data


def test_an_edit_keeps_encoding_byte_order_mark_and_line_breaks(tabs: DocumentTabs, tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_bytes(codecs.BOM_UTF16_BE + "Prix\u00a0: 5\r\nmixed\rend".encode("utf-16-be"))
    editor = tabs.open_file(path)
    editor.moveCursor(editor.textCursor().MoveOperation.End)
    editor.insertPlainText(" and more\nnew line")
    editor.moveCursor(editor.textCursor().MoveOperation.Start)
    editor.insertPlainText("Le ")
    tabs.save(editor)
    expected = "Le Prix\u00a0: 5\r\nmixed\rend and more\r\nnew line"
    assert path.read_bytes() == codecs.BOM_UTF16_BE + expected.encode("utf-16-be")


def test_qt_frame_markers_stay_characters_and_new_lines_get_a_real_line_break(tabs: DocumentTabs,
                                                                               tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_bytes("one\ufdd0two\ufdd0three\ufdd1four\r\nfive".encode())
    editor = tabs.open_file(path)
    editor.moveCursor(editor.textCursor().MoveOperation.End)
    editor.insertPlainText("\nsix")
    tabs.save(editor)
    assert path.read_bytes() == "one\ufdd0two\ufdd0three\ufdd1four\r\nfive\r\nsix".encode()


def test_autosave_and_recovery_keep_the_files_characters(make_window: MakeWindow, tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    data = b"Prix\xa0: 5\r\nfrancs\r"
    path.write_bytes(data)
    window = make_window(load_model=False, wait_model=False)
    window.open_path(path)
    window.tabs.current().document().setModified(True)  # an edit undone: the text is as the file holds it
    window.autosaver.touch(window.tabs.current())
    window.autosaver.flush()
    leave_as_crashed(window.autosave_session.directory)
    path.write_bytes(b"changed elsewhere")
    again = make_window(load_model=False, wait_model=False)
    (editor,) = again.recover_documents()
    again.save_current()
    assert editor.encoding == "cp1252" and path.read_bytes() == data


def test_saving_over_a_read_only_file_is_refused(tabs: DocumentTabs, tmp_path: Path) -> None:
    path = tmp_path / "kept.txt"
    path.write_text("original")
    path.chmod(0o444)
    editor = tabs.open_file(path)
    editor.insertPlainText("changed ")
    with pytest.raises(DocumentError, match=r"kept\.txt is read-only, so it was not replaced; use Save As"):
        tabs.save(editor)
    assert path.read_text() == "original" and editor.modified
    tabs.save(editor, tmp_path / "copy.txt")
    assert (tmp_path / "copy.txt").read_text() == "changed original"


ALPHABET = ["a", "é", " ", "\u00a0", "\r", "\n", "\r\n", "\u2028", "\u2029", "\t", "\x00", "\ufeff", "€", "😀",
            "\ufdd0", "\ufdd1"]
ENCODINGS = ["utf-8", "utf-8-sig", "utf-16le-bom", "utf-16be-bom", "cp1252", "latin-1"]


def test_random_files_round_trip_byte_for_byte(tabs: DocumentTabs, tmp_path: Path) -> None:
    rng, path, tried = random.Random(28), tmp_path / "f.txt", 0
    for _ in range(300):
        text = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 16)))
        try:
            data = encode_text(text, rng.choice(ENCODINGS))
        except UnicodeEncodeError:
            continue
        path.write_bytes(data)
        editor = tabs.open_file(path)
        assert decode_bytes(data).text == editor.original
        tabs.save(editor)
        assert path.read_bytes() == data, (data, path.read_bytes())
        tabs.close_editor(editor)
        tried += 1
    assert tried > 200


def test_random_edits_write_back_exactly_the_edited_paragraphs() -> None:
    rng = random.Random(15)
    for _ in range(3000):
        original = "".join(rng.choice(["a", " ", "\r", "\n", "\r\n", "\u2029", "\u2028", "\ufdd0"]) for _ in range(12))
        lines = LINE_BREAK.sub(PARAGRAPH, original).split(PARAGRAPH)
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(lines))
            if rng.random() < 0.4:
                lines.insert(at, rng.choice(["new", ""]))
            elif len(lines) > 1 and rng.random() < 0.5:
                lines.pop(at)
            else:
                lines[at] += "x"
        edited = PARAGRAPH.join(lines)
        assert LINE_BREAK.sub(PARAGRAPH, file_text(edited, original)) == edited, (original, edited)
