"""Malformed bundles in the user models dir are listed as unusable with their reason; they never break
`variorum bundles` or `variorum generate` without --bundle, and neither does an unlistable folder."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from engine import front_door
from engine.cli import main

DEEP = "[" * 100_000 + "]" * 100_000


def _permgen_config(permgen: object) -> str:
    return json.dumps({"format_version": 2, "kind": "permgen", "model": {"head": "softmax"}, "permgen": permgen})


@pytest.fixture
def user_models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tiny_bundle: Path) -> Path:
    resources = tmp_path / "resources"
    shutil.copytree(tiny_bundle, resources / "tiny")
    user = tmp_path / "user"
    for name, config in (("deep", DEEP), ("listy", _permgen_config([1])), ("stringy", _permgen_config("x"))):
        (user / name).mkdir(parents=True)
        (user / name / "config.json").write_text(config)
    (user / "fifo").mkdir()
    os.mkfifo(user / "fifo" / "config.json")
    monkeypatch.setattr(front_door, "RESOURCES_MODELS", resources)
    monkeypatch.setattr(front_door, "user_models_dir", lambda: user)
    return user


def test_listing_names_each_unusable_bundle_with_its_reason(user_models: Path) -> None:
    errors = {info.name: info.error for info in front_door.Engine().list_bundles()}
    assert errors["tiny"] == "" and errors["deep"] == "config.json is nested too deeply to be read"
    assert "has no 'model' and 'permgen' sections" in errors["listy"] and errors["stringy"] == errors["listy"]
    assert "not a regular file" in errors["fifo"]


def test_bundles_and_generate_still_work(user_models: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bundles"]) == 0
    out = capsys.readouterr().out
    assert "tiny  [softmax]" in out and "deep  [?]" in out and "listy  [?]" in out and "UNUSABLE" in out
    assert main(["generate", "-n", "1", "--max-new-tokens", "2", "--seed", "0"]) == 0
    assert "--- variant 1 · seed 0" in capsys.readouterr().out


def test_an_unlistable_models_folder_is_one_unusable_entry(user_models: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    listed = Path.iterdir

    def refuse_user_folder(self: Path):  # type: ignore[no-untyped-def]
        if self == user_models:
            raise PermissionError(13, "Permission denied", str(self))
        return listed(self)

    monkeypatch.setattr(Path, "iterdir", refuse_user_folder)
    infos = front_door.Engine().list_bundles()
    assert [i.name for i in infos] == ["tiny", "user"]
    assert infos[1].error == "cannot list this models folder (Permission denied)"
