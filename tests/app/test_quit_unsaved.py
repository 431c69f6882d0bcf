"""Quitting with many unsaved documents asks once, in one dialog that lists them, with Save All / Discard All /
Cancel; closing one tab still asks about that tab alone."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QMessageBox

from app.main_window import MainWindow
from app.window_files import unsaved_list
from tests.app.conftest import MakeWindow


def _unsaved_window(make_window: MakeWindow, tmp_path: Path, files: int) -> tuple[MainWindow, list[Path]]:
    """A window with `files` documents opened from files and edited, plus the untitled tab edited too; the real
    dialog (conftest answers 'discard' without one)."""
    window = make_window(load_model=False, wait_model=False)
    del window.ask_unsaved  # the class's dialog again
    paths = []
    for number in range(files):
        path = tmp_path / f"chapter {number}.txt"
        path.write_text("draft")
        editor = window.open_path(path)
        assert editor is not None
        editor.insertPlainText(f"new {number} ")
        paths.append(path)
    return window, paths


def _discard_at_teardown(window: MainWindow) -> None:
    """The window is still open: the fixture closes it without a dialog, as conftest's windows are."""
    window.ask_unsaved = lambda editors: "discard"  # type: ignore[method-assign]


class DialogAnswers:
    """Clicks one button in every message box that opens until the test ends, keeping each box's text and
    informative text in `seen` (so a second dialog would be answered and counted too)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []
        self.click = ""
        self._opened: list[QMessageBox] = []
        self._stopped = False

    def start(self, click: str) -> None:
        self.click = click
        QTimer.singleShot(0, self._answer)

    def stop(self) -> None:
        self._stopped = True

    def _answer(self) -> None:
        if self._stopped:
            return
        box = QApplication.activeModalWidget()
        if isinstance(box, QMessageBox) and not any(b is box for b in self._opened):
            self._opened.append(box)
            self.seen.append((box.text(), box.informativeText()))
            button = next(b for b in box.buttons() if b.text().replace("&", "") == self.click)
            QTimer.singleShot(0, button.click)
        QTimer.singleShot(10, self._answer)


@pytest.fixture
def answers() -> Iterator[DialogAnswers]:
    answering = DialogAnswers()
    yield answering
    answering.stop()


def test_quitting_with_thirteen_unsaved_tabs_asks_once_and_discards_all(make_window: MakeWindow, tmp_path: Path,
                                                                         answers: DialogAnswers) -> None:
    window, paths = _unsaved_window(make_window, tmp_path, 13)
    answers.start("Discard All")
    assert window.close()
    assert len(answers.seen) == 1
    text, informative = answers.seen[0]
    assert text == "13 documents have unsaved changes. Save them before closing?"
    listed = informative.splitlines()
    assert listed == [f"• chapter {number}.txt" for number in range(13)]
    assert all(path.read_text() == "draft" for path in paths)  # discarded: the files are as they were
    assert not window.autosave_session.directory.exists()


def test_save_all_saves_every_document(make_window: MakeWindow, tmp_path: Path, answers: DialogAnswers) -> None:
    window, paths = _unsaved_window(make_window, tmp_path, 3)
    answers.start("Save All")
    assert window.close()
    assert len(answers.seen) == 1 and [p.read_text() for p in paths] == ["new 0 draft", "new 1 draft", "new 2 draft"]


def test_cancel_closes_nothing(make_window: MakeWindow, tmp_path: Path, answers: DialogAnswers) -> None:
    window, paths = _unsaved_window(make_window, tmp_path, 2)
    answers.start("Cancel")
    assert not window.close()
    assert len(answers.seen) == 1 and window.isVisible() and all(e.modified for e in window.tabs.editors()[-2:])
    assert all(path.read_text() == "draft" for path in paths)
    _discard_at_teardown(window)


def test_a_cancelled_save_as_keeps_the_window_open(make_window: MakeWindow, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch, answers: DialogAnswers) -> None:
    window, _ = _unsaved_window(make_window, tmp_path, 1)
    window.tabs.editors()[0].insertPlainText("never saved")  # the untitled tab: Save All asks where
    monkeypatch.setattr("app.window_files.QFileDialog.getSaveFileName", lambda *args, **kwargs: ("", ""))
    answers.start("Save All")
    assert not window.close()
    assert len(answers.seen) == 1 and window.isVisible()
    _discard_at_teardown(window)


def test_closing_one_tab_asks_about_that_tab(make_window: MakeWindow, tmp_path: Path, answers: DialogAnswers) -> None:
    window, _ = _unsaved_window(make_window, tmp_path, 2)
    answers.start("Discard")
    assert window.close_tab(window.tabs.count() - 1)
    assert len(answers.seen) == 1 and answers.seen[0][0] == "Save changes to chapter 1.txt?"
    _discard_at_teardown(window)


def test_a_long_list_names_the_first_fifteen() -> None:
    listed = unsaved_list([f"Untitled {number}" for number in range(1, 21)]).splitlines()
    assert len(listed) == 16 and listed[14] == "• Untitled 15" and listed[-1] == "…and 5 more"
