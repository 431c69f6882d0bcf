"""Cards carry relative data paths and commands, whatever paths the training command was given."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.training.card import portable_command, portable_path


def test_absolute_paths_become_relative_to_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "repo").mkdir()
    monkeypatch.chdir(tmp_path / "repo")
    data = tmp_path / "shared" / "data" / "a b.txt"
    assert portable_path(str(data)) == "../shared/data/a b.txt"
    assert portable_path("runs/x") == "runs/x"
    command = f"variorum train --train-files {data} data/b.txt --out-dir={tmp_path}/repo/runs/x --lr 1e-3"
    assert portable_command(command.replace(str(data), f"'{data}'")) == (
        "variorum train --train-files '../shared/data/a b.txt' data/b.txt --out-dir=runs/x --lr 1e-3")
    assert str(tmp_path) not in portable_command(command.replace(str(data), f"'{data}'"))


def test_a_path_in_the_home_folder_outside_the_working_directory_is_shown_from_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "home" / "repo").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path / "home" / "repo")
    models = tmp_path / "home" / ".local" / "share" / "variorum" / "models" / "base"
    assert portable_path(str(models)) == "~/.local/share/variorum/models/base"
    assert portable_path(str(tmp_path / "home" / "repo" / "runs" / "x")) == "runs/x"
