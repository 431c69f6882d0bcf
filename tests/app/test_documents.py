"""The writer's files and documents: Save on a new document, history kept with the document, one seed
range from box to engine, font size on every tab, file modes and encodings kept on save."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from PySide6.QtGui import QKeySequence
from pytestqt.qtbot import QtBot

from app.controls import spec
from app.paths import AppPaths
from engine.controls import Capabilities
from engine.decode_fields import MAX_SEED
from engine.decoding.settings import DecodeSettingError
from engine.front_door import DecodeConfig, Engine
from tests.app.conftest import MakeWindow, leave_as_crashed


def _generate(window, qtbot: QtBot) -> None:  # type: ignore[no-untyped-def]
    assert window.generate()
    qtbot.waitUntil(lambda: not window.generator.running, timeout=10_000)


def test_ctrl_s_on_new_document_opens_the_save_dialog(make_window: MakeWindow, qtbot: QtBot, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "chapter.txt"
    asked: list[str] = []

    def dialog(*args: object) -> tuple[str, str]:
        asked.append("save as")
        return str(target), ""

    monkeypatch.setattr("app.window_files.QFileDialog.getSaveFileName", dialog)
    window = make_window(load_model=False, wait_model=False)
    editor = window.tabs.current()
    editor.setPlainText("Fresh words")
    save = next(a for a in window.menus["&File"].actions() if a.text() == "Save")
    assert save.shortcut() == QKeySequence(QKeySequence.StandardKey.Save)
    save.trigger()  # File → Save and Ctrl+S
    assert asked == ["save as"] and target.read_text() == "Fresh words"
    assert "use Save As" not in window.messages.label.text() and not editor.modified


def test_history_is_kept_with_the_saved_document_across_restarts(make_window: MakeWindow, qtbot: QtBot,
                                                                  tmp_path: Path) -> None:
    window = make_window()
    window.tabs.current().setPlainText("Once upon a time")
    _generate(window, qtbot)
    first = [p.state.text for p in window.variants.panes]
    target = tmp_path / "story.txt"
    assert window.save_current(target)
    window.close()
    again = make_window()
    editor = again.open_path(target)
    assert editor is not None and len(editor.history) == 1 and again.history_list.count() == 1
    again.restore_batch(0)
    assert [p.state.text for p in again.variants.panes] == first


def test_history_of_an_unsaved_document_rides_in_its_autosave(make_window: MakeWindow, qtbot: QtBot,
                                                               home: AppPaths) -> None:
    window = make_window(autosave_ms=10)
    window.tabs.current().insertPlainText("Draft")
    _generate(window, qtbot)
    window.autosaver.flush()
    leave_as_crashed(window.autosave_session.directory)
    again = make_window(load_model=False, wait_model=False)
    (editor,) = again.recover_documents()
    assert editor.toPlainText() == "Draft" and len(editor.history) == 1


def test_restoring_a_batch_keeps_the_controls_until_asked(make_window: MakeWindow, qtbot: QtBot) -> None:
    window = make_window()
    window.controls.decode.set_values({"temperature": 0.5, "top_k": 10})
    _generate(window, qtbot)
    window.controls.decode.set_values({"temperature": 2.0, "top_k": 50})
    window.restore_batch(0)
    assert (window.controls.decode.values()["temperature"], window.controls.decode.values()["top_k"]) == (2.0, 50)
    window.use_batch_settings(0)
    assert (window.controls.decode.values()["temperature"], window.controls.decode.values()["top_k"]) == (0.5, 10)


def test_seed_box_range_is_the_engine_range(qtbot: QtBot) -> None:
    from app.controls.decode_box import DecodeBox

    DecodeConfig(seed=MAX_SEED)  # the largest seed the box holds is one the engine takes
    with pytest.raises(DecodeSettingError):
        DecodeConfig(seed=MAX_SEED + 1)
    box = DecodeBox()
    qtbot.addWidget(box)
    shown = 2**62 + 7  # the size of seed the engine draws and a pane shows
    box.seed_fixed.setChecked(True)
    box.seed.lineEdit().clear()
    qtbot.keyClicks(box.seed.lineEdit(), str(shown))
    assert box.seed.value() == shown and box.values()["seed"] == shown
    assert spec.decode_config(box.values(), Capabilities()).seed == shown
    box.seed.setValue(10**30)
    assert box.seed.value() == MAX_SEED


def test_any_variant_is_reproduced_from_its_shown_seed(make_window: MakeWindow, qtbot: QtBot,
                                                       tiny_bundle: Path) -> None:
    window = make_window(Engine(search_dirs=[tiny_bundle.parent]))
    window.tabs.current().setPlainText("Tom")
    window.controls.decode.set_values({"n": 3, "max_new_tokens": 8, "seed_fixed": False})
    _generate(window, qtbot)
    third = window.variants.panes[2].state
    assert third.seed is not None and third.seed > 2**31  # a random seed of the engine's full range
    window.controls.decode.set_values({"n": 1, "seed_fixed": True, "drafts": 1})  # its seed alone, no other draft
    window.controls.decode.seed.lineEdit().clear()
    qtbot.keyClicks(window.controls.decode.seed.lineEdit(), str(third.seed))
    _generate(window, qtbot)
    assert window.variants.panes[0].state.seed == third.seed
    assert window.variants.panes[0].state.text == third.text


def test_new_opened_and_recovered_tabs_use_the_font_size(make_window: MakeWindow, tmp_path: Path) -> None:
    window = make_window(load_model=False, wait_model=False)
    window.set_font_size(21)
    file = tmp_path / "notes.txt"
    file.write_text("notes")
    opened = window.open_path(file)
    assert opened is not None
    for editor in (window.new_document(), opened, window.tabs.new_document("recovered")):
        assert editor.font().pointSize() == 21


def test_saving_keeps_the_file_mode_and_new_files_get_the_umask_default(make_window: MakeWindow,
                                                                        tmp_path: Path) -> None:
    window = make_window(load_model=False, wait_model=False)
    existing = tmp_path / "shared.txt"
    existing.write_text("old")
    existing.chmod(0o664)
    editor = window.open_path(existing)
    assert editor is not None
    editor.setPlainText("new")
    assert window.save_current()
    assert stat.S_IMODE(existing.stat().st_mode) == 0o664 and existing.read_text() == "new"
    old_umask = os.umask(0o027)
    try:
        window.new_document().setPlainText("fresh")
        assert window.save_current(tmp_path / "fresh.txt")
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE((tmp_path / "fresh.txt").stat().st_mode) == 0o640


def test_latin1_file_is_read_and_saved_as_latin1(make_window: MakeWindow, tmp_path: Path) -> None:
    window = make_window(load_model=False, wait_model=False)
    file = tmp_path / "lettre.txt"
    file.write_bytes("Le café était très naïf.\n".encode("latin-1"))
    editor = window.open_path(file)
    assert editor is not None and editor.toPlainText() == "Le café était très naïf.\n"
    assert "\ufffd" not in editor.toPlainText() and "not UTF-8" in window.messages.label.text()
    editor.setPlainText(editor.toPlainText() + "Fin à Noël.")
    assert window.save_current()
    assert file.read_bytes() == "Le café était très naïf.\nFin à Noël.".encode("latin-1")


def test_text_the_old_encoding_cannot_hold_is_saved_as_utf8_with_a_notice(make_window: MakeWindow,
                                                                          tmp_path: Path) -> None:
    window = make_window(load_model=False, wait_model=False)
    file = tmp_path / "old.txt"
    file.write_bytes("déjà".encode("latin-1"))
    editor = window.open_path(file)
    assert editor is not None
    editor.setPlainText("déjà 日本")
    assert window.save_current()
    assert file.read_bytes() == "déjà 日本".encode() and "saved as UTF-8" in window.messages.label.text()


@pytest.mark.parametrize(("data", "text"), [
    ("plain ünïcode".encode(), "plain ünïcode"),
    ("\ufeffwith bom".encode("utf-8"), "with bom"),
    ("utf-16 ünï".encode("utf-16"), "utf-16 ünï"),
    ("“smart” quotes".encode("cp1252"), "“smart” quotes"),
    (bytes([0x81, 0xE9]), "\x81é"),  # 0x81 is not Windows-1252: Latin-1 still keeps every byte
])
def test_encodings_round_trip_byte_for_byte(make_window: MakeWindow, tmp_path: Path, data: bytes,
                                            text: str) -> None:
    window = make_window(load_model=False, wait_model=False)
    file = tmp_path / "any.txt"
    file.write_bytes(data)
    editor = window.open_path(file)
    assert editor is not None and editor.toPlainText() == text
    editor.document().setModified(True)
    assert window.save_current()
    assert file.read_bytes() == data


def test_seed_box_refuses_letters_and_seeds_beyond_the_range(qtbot: QtBot) -> None:
    from app.controls.seed_box import SeedBox

    box = SeedBox(5)
    qtbot.addWidget(box)
    box.lineEdit().clear()
    qtbot.keyClicks(box.lineEdit(), "12a3")
    assert box.value() == 123 and box.lineEdit().text() == "123"
    box.lineEdit().setText("")
    qtbot.keyClicks(box.lineEdit(), str(MAX_SEED) + "0")  # one digit too many is refused
    assert box.value() == MAX_SEED


def test_recovered_file_gets_its_history_from_the_store(make_window: MakeWindow, qtbot: QtBot,
                                                        tmp_path: Path) -> None:
    window = make_window(autosave_ms=10)
    target = tmp_path / "kept.txt"
    window.tabs.current().insertPlainText("Saved once")
    assert window.save_current(target)
    _generate(window, qtbot)
    window.tabs.current().insertPlainText(", then changed")
    window.autosaver.flush()
    leave_as_crashed(window.autosave_session.directory)
    again = make_window(load_model=False, wait_model=False)
    (editor,) = again.recover_documents()
    assert editor.toPlainText() == "Saved once, then changed" and len(editor.history) == 1
