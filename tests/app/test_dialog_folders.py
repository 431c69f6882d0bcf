"""Open, Save As and Add model start in the writer's documents folder, then in the folder last used: never in
the app's working folder (the source tree when run from it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.paths import dialog_folder, documents_dir
from tests.app.conftest import MakeWindow


@pytest.fixture
def documents(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "Documents"
    folder.mkdir()
    monkeypatch.setattr("app.paths.platformdirs.user_documents_dir", lambda: str(folder))
    return folder


def _record(monkeypatch: pytest.MonkeyPatch, name: str, answer: object) -> list[str]:
    """Replace the QFileDialog function `name` by one that keeps the folder (or file) it was asked to start at."""
    starts: list[str] = []

    def dialog(parent: object, caption: str, start: str = "", *rest: object) -> object:
        starts.append(start)
        return answer

    monkeypatch.setattr(f"app.window_files.QFileDialog.{name}", dialog)
    return starts


def test_save_as_starts_in_documents_then_in_the_folder_last_used(make_window: MakeWindow, documents: Path,
                                                                  tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    window = make_window(load_model=False, wait_model=False)
    elsewhere = tmp_path / "novel"
    elsewhere.mkdir()
    starts = _record(monkeypatch, "getSaveFileName", (str(elsewhere / "chapter.txt"), ""))
    window.tabs.current().insertPlainText("one")
    assert window.save_as_dialog()
    window.new_document().insertPlainText("two")
    assert window.save_as_dialog()
    assert starts == [str(documents / "Untitled 1.txt"), str(elsewhere / "Untitled 2.txt")]
    assert not any(start.startswith(str(Path.cwd())) for start in starts)


def test_open_starts_in_documents_then_in_the_folder_last_used(make_window: MakeWindow, documents: Path,
                                                               tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    window = make_window(load_model=False, wait_model=False)
    opened = tmp_path / "drafts" / "notes.txt"
    opened.parent.mkdir()
    opened.write_text("notes")
    starts = _record(monkeypatch, "getOpenFileName", (str(opened), ""))
    window.open_dialog()
    window.open_dialog()
    assert starts == [str(documents), str(opened.parent)]


def test_add_model_starts_in_documents_then_beside_the_model_added_last(make_window: MakeWindow, documents: Path,
                                                                        tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    window = make_window(load_model=False, wait_model=False)
    starts: list[str] = []
    monkeypatch.setattr("app.window_models.QFileDialog.getExistingDirectory",
                        lambda parent, caption, start="": starts.append(start) or "")
    window.add_model_folder_dialog()
    (tmp_path / "models" / "mine").mkdir(parents=True)
    window.settings.model_folders.append(str(tmp_path / "models" / "mine"))
    window.add_model_folder_dialog()
    assert starts == [str(documents), str(tmp_path / "models")]


def test_without_a_documents_folder_dialogs_start_at_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("app.paths.platformdirs.user_documents_dir", lambda: str(tmp_path / "missing"))
    assert documents_dir() == Path.home()
    assert dialog_folder([str(tmp_path / "gone"), "", str(tmp_path)]) == tmp_path
