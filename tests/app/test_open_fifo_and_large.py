"""Opening never freezes the window: a FIFO (or device) named *.txt is refused at once with one line, and a
large file is read off the UI thread, then opened in a tab."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtGui import QTextCursor
from pytestqt.qtbot import QtBot

from app.editor.building import DocumentBuilder
from app.editor.document import DocumentEditor
from app.editor.tabs import read_document
from app.editor.text_file import TextFile
from app.window_files import READ_AT_ONCE
from tests.app.conftest import MakeWindow


@contextlib.contextmanager
def unblocking(fifo: Path) -> Iterator[None]:
    """If the code under test waits on the FIFO for a writer, be that writer after a few seconds, so a
    regression fails the test instead of hanging it."""
    def write_once() -> None:
        with contextlib.suppress(OSError):  # ENXIO: nobody has it open for reading, as it should be
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))

    timer = threading.Timer(5.0, write_once)
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are a POSIX feature")
def test_a_fifo_named_txt_is_refused_at_once(make_window: MakeWindow, tmp_path: Path) -> None:
    window = make_window(load_model=False, wait_model=False)
    fifo = tmp_path / "chapter.txt"
    os.mkfifo(fifo)
    with unblocking(fifo):
        assert window.open_path(fifo) is None
    assert window.messages.kind == "error"
    assert window.messages.label.text() == f"Could not open {fifo}: is a device, FIFO or socket, not a regular file"
    assert len(window.tabs.editors()) == 1  # only the untitled tab


def test_a_device_named_txt_is_refused(make_window: MakeWindow, tmp_path: Path) -> None:
    zero = tmp_path / "zero.txt"
    zero.symlink_to("/dev/zero")  # reading it would never end
    window = make_window(load_model=False, wait_model=False)
    assert window.open_path(zero) is None and "not a regular file" in window.messages.label.text()


def test_a_large_file_is_read_off_the_ui_thread(make_window: MakeWindow, tmp_path: Path, qtbot: QtBot,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    big = tmp_path / "big.txt"
    big.write_text("All work and no play.\n" * (READ_AT_ONCE // 20))
    readers: list[threading.Thread] = []
    release = threading.Event()

    def slow_read(path: Path) -> TextFile:
        readers.append(threading.current_thread())
        release.wait(10)  # a slow disk: the window must keep running meanwhile
        return read_document(path)

    monkeypatch.setattr("app.window_files.read_document", slow_read)
    window = make_window(load_model=False, wait_model=False)
    assert window.open_path(big) is None  # not open yet: being read
    assert window.open_path(big) is None  # asked twice while reading: still one tab in the end
    assert window.messages.label.text().startswith("Opening big.txt (2 MB)…")
    qtbot.wait(50)  # the event loop runs while the file is read
    release.set()
    qtbot.waitUntil(lambda: len(window.tabs.editors()) == 2, timeout=10_000)
    qtbot.wait(100)
    assert readers and all(reader is not threading.main_thread() for reader in readers)
    (editor,) = [e for e in window.tabs.editors() if e.path == big.resolve()]
    assert editor.toPlainText() == big.read_text() and not editor.modified
    assert window.messages.kind == "" and window.settings.recent_files[0] == str(big.resolve())
    assert editor.document().defaultFont() == editor.font() and not editor.document().isUndoAvailable()
    words = editor.word_count()
    editor.moveCursor(QTextCursor.MoveOperation.End)
    editor.insertPlainText(" one more")  # the built document is the editor's own now: edits, undo, counts
    assert editor.modified and editor.word_count() == words + 2
    editor.undo()
    assert editor.word_count() == words and editor.toPlainText() == big.read_text()


@pytest.mark.parametrize("piece", [1, 2, 7])  # pieces of one character end between every CR and LF
def test_a_document_built_in_pieces_is_the_one_set_plain_text_makes(qtbot: QtBot, monkeypatch: pytest.MonkeyPatch,
                                                                     piece: int) -> None:
    monkeypatch.setattr("app.editor.building.PIECE", piece)
    text = "\ufeffone\r\ntwo\rthree\n\u2029four\ufdd0five\u2028six\r\n\r\nseven\r" * 3
    builder = DocumentBuilder(text)
    with qtbot.waitSignal(builder.built, timeout=10_000):
        builder.start()
    built, whole = DocumentEditor(), DocumentEditor()
    qtbot.addWidget(built)
    qtbot.addWidget(whole)
    built.load_text(text, "utf-8", built=builder.document)
    whole.load_text(text, "utf-8")
    assert built.document().toRawText() == whole.document().toRawText()
    assert built.document().blockCount() == whole.document().blockCount()
    assert built.file_text() == text and built.word_count() == whole.word_count()


def test_a_large_file_that_cannot_be_read_says_why(make_window: MakeWindow, tmp_path: Path, qtbot: QtBot) -> None:
    big = tmp_path / "big.txt"
    big.write_bytes(b"x" * (READ_AT_ONCE + 1))
    big.chmod(0)
    if os.access(big, os.R_OK):
        pytest.skip("running as root: the file stays readable")
    window = make_window(load_model=False, wait_model=False)
    assert window.open_path(big) is None
    qtbot.waitUntil(lambda: window.messages.kind == "error", timeout=10_000)
    assert window.messages.label.text() == f"Could not open {big}: Permission denied"


def test_a_large_file_of_another_type_is_refused_at_once(make_window: MakeWindow, tmp_path: Path) -> None:
    image = tmp_path / "photo.png"
    image.write_bytes(b"\x89PNG" + b"\0" * (READ_AT_ONCE + 1))
    window = make_window(load_model=False, wait_model=False)
    assert window.open_path(image) is None
    assert window.messages.label.text() == "photo.png: only plain text (.txt) and Markdown (.md) files can be opened."
