"""A writer's own models in the app: the model box lists a cached pretrained checkpoint after the bundles,
picking it imports it off the UI thread, then loads it and writes with it; "Add model from folder…"
takes a bundle folder (remembered for the next start), a checkpoint folder (imported) and refuses
anything else with the engine's message, leaving the document and the loaded model as they were."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pytestqt.qtbot import QtBot

from app.main_window import MainWindow
from engine.front_door import Engine
from tests.app.conftest import MakeWindow
from tests.engine.checkpoints.conftest import add_to_cache, write_gpt2

CHECKPOINT = "acme/tiny-gpt2"


@pytest.fixture(scope="module")
def gpt2_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_gpt2(tmp_path_factory.mktemp("ckpt") / "my-gpt2")


@pytest.fixture
def models(tmp_path: Path, tiny_bundle: Path, monkeypatch: pytest.MonkeyPatch, qapp: object) -> Path:
    """The user models folder (in tmp, holding one bundle), with the Hugging Face cache and HOME in tmp too.
    HOME moves only once Qt has started (`qapp`), so Qt reads nothing from the empty one."""
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.delenv("HF_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    shutil.copytree(tiny_bundle, tmp_path / "models" / "tiny")
    return tmp_path / "models"


def _engine(models: Path) -> Engine:
    return Engine([models], models_dir=models)


def _labels(window: MainWindow) -> list[str]:
    picker = window.controls.model.picker
    return [picker.itemText(i) for i in range(picker.count())]


def _add_folder(window: MainWindow, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the writer's click on "Add model from folder…" and their choice in the folder dialog do."""
    monkeypatch.setattr("app.window_models.QFileDialog.getExistingDirectory", lambda *args, **kwargs: str(folder))
    window.controls.model.add_folder.click()


def test_a_cached_checkpoint_is_listed_imported_loaded_and_writes(make_window: MakeWindow, qtbot: QtBot,
                                                                  models: Path, gpt2_folder: Path,
                                                                  tmp_path: Path) -> None:
    add_to_cache(tmp_path / "hub", CHECKPOINT, gpt2_folder)
    window = make_window(_engine(models))
    first = window.model
    qtbot.waitUntil(lambda: len(_labels(window)) == 3, timeout=10_000)  # the bundle, a separator, the checkpoint
    labels = _labels(window)
    assert labels[0] == "tiny" and labels[2] == f"{CHECKPOINT} — pretrained checkpoint, click to import"
    box = window.controls.model
    box.picker.setCurrentIndex(2)
    box.picker.activated.emit(2)
    # the import runs in the worker: the box is busy and says so, the message bar too
    assert not box.picker.isEnabled() and not box.add_folder.isEnabled() and not box.progress.isHidden()
    assert box.status.text() == f"Importing {CHECKPOINT}…" and "reading its weights" in window.messages.label.text()
    bundle = models / "tiny-gpt2"
    qtbot.waitUntil(lambda: window.settings.last_bundle == str(bundle) and window.model is not first, timeout=30_000)
    assert box.picker.currentText() == "tiny-gpt2" and box.picker.isEnabled()
    assert f"{CHECKPOINT} is one of your models now" in window.messages.label.text()
    qtbot.waitUntil(lambda: _labels(window) == ["tiny", "tiny-gpt2"], timeout=10_000)  # imported: offered no more
    assert window.settings.model_folders == []  # it is in the models folder, listed anyway
    window.tabs.current().setPlainText("The cat")
    window.controls.decode.set_values({"n": 2, "seed_fixed": True, "seed": 3, "max_new_tokens": 6})
    assert window.generate()
    qtbot.waitUntil(lambda: not window.generator.running, timeout=30_000)
    assert window.messages.kind != "error"
    assert all(pane.state.tokens > 0 for pane in window.variants.panes)


def test_add_model_from_folder_takes_a_bundle_a_checkpoint_and_refuses_junk(
    make_window: MakeWindow, qtbot: QtBot, models: Path, gpt2_folder: Path, tiny_bundle: Path, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    window = make_window(_engine(models))
    editor = window.tabs.current()
    editor.setPlainText("My draft, which must survive.")
    loaded = window.model
    junk = tmp_path / "holiday-photos"
    junk.mkdir()
    (junk / "beach.jpg").write_bytes(b"\xff\xd8")
    _add_folder(window, junk, monkeypatch)
    qtbot.waitUntil(lambda: window.messages.kind == "error", timeout=10_000)
    text = window.messages.label.text()
    assert "Could not add holiday-photos as a model" in text and "holds no model" in text
    assert window.model is loaded and editor.toPlainText() == "My draft, which must survive."
    assert _labels(window) == ["tiny"] and window.controls.model.picker.isEnabled()
    assert window.settings.model_folders == [] and not (models / "holiday-photos").exists()

    mine = shutil.copytree(tiny_bundle, tmp_path / "elsewhere" / "mine")
    _add_folder(window, mine, monkeypatch)
    qtbot.waitUntil(lambda: window.settings.last_bundle == str(mine), timeout=30_000)
    assert window.model is not loaded and window.controls.model.picker.currentText() == "mine"
    assert _labels(window) == ["tiny", "mine"] and window.settings.model_folders == [str(mine)]

    assert any(  # the File menu offers the same action
        a.text() == "Add Model from Folder…" for a in window.menus["&File"].actions())
    _add_folder(window, gpt2_folder, monkeypatch)
    qtbot.waitUntil(lambda: window.settings.last_bundle == str(models / "my-gpt2"), timeout=30_000)
    assert _labels(window) == ["my-gpt2", "tiny", "mine"] and window.settings.model_folders == [str(mine)]
    assert editor.toPlainText() == "My draft, which must survive."
    assert window.settings_saver.flush()

    again = make_window(_engine(models))  # the next start lists the added bundle folder again
    assert [b.name for b in again.controls.model.bundles] == ["my-gpt2", "tiny", "mine"]
    assert again.controls.model.picker.currentText() == "my-gpt2"  # the model last used


def test_with_no_model_yet_a_cached_checkpoint_is_the_way_in(make_window: MakeWindow, qtbot: QtBot, models: Path,
                                                             gpt2_folder: Path, tmp_path: Path) -> None:
    shutil.rmtree(models / "tiny")
    add_to_cache(tmp_path / "hub", CHECKPOINT, gpt2_folder)
    window = make_window(_engine(models), wait_model=False)
    assert "No model found" in window.messages.label.text() and "Add model from folder" in window.messages.label.text()
    box = window.controls.model
    qtbot.waitUntil(lambda: _labels(window) == [f"{CHECKPOINT} — pretrained checkpoint, click to import"],
                    timeout=10_000)
    assert "pick a pretrained checkpoint in the list" in box.status.text()
    box.picker.activated.emit(0)
    qtbot.waitUntil(lambda: window.model is not None, timeout=30_000)
    assert box.picker.currentText() == "tiny-gpt2" and window.controls.generate.isEnabled()


def test_a_checkpoint_gone_since_it_was_listed_is_refused_and_the_model_kept(
    make_window: MakeWindow, qtbot: QtBot, models: Path, gpt2_folder: Path, tmp_path: Path,
) -> None:
    snapshot = add_to_cache(tmp_path / "hub", CHECKPOINT, gpt2_folder)
    window = make_window(_engine(models))
    loaded = window.model
    qtbot.waitUntil(lambda: len(_labels(window)) == 3, timeout=10_000)
    (snapshot / "merges.txt").resolve().unlink()  # the writer cleaned the cache meanwhile
    box = window.controls.model
    box.picker.setCurrentIndex(2)
    box.picker.activated.emit(2)
    qtbot.waitUntil(lambda: window.messages.kind == "error", timeout=30_000)
    assert f"Could not add {CHECKPOINT} as a model" in window.messages.label.text()
    assert "merges.txt (the tokenizer's merges) is a broken link" in window.messages.label.text()
    assert window.model is loaded and box.picker.currentText() == "tiny" and box.picker.isEnabled()
    assert not (models / "tiny-gpt2").exists()
