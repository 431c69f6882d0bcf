"""One malformed bundle in the user models dir is listed as unusable and named; it never breaks
`variorum bundles` or `variorum generate` without --bundle."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from engine import api
from engine.cli import main

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.fixture
def user_models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tiny_bundle: Path) -> Path:
    resources = tmp_path / "resources"
    shutil.copytree(tiny_bundle, resources / "tiny")
    user = tmp_path / "user"
    (user / "deep").mkdir(parents=True)
    (user / "deep" / "config.json").write_text(DEEP)
    monkeypatch.setattr(api, "RESOURCES_MODELS", resources)
    monkeypatch.setattr(api, "user_models_dir", lambda: user)
    return user


def test_listing_names_a_deeply_nested_config_as_unusable(user_models: Path) -> None:
    infos = {info.name: info for info in api.Engine().list_bundles()}
    assert infos["tiny"].error == "" and "unreadable config.json" in infos["deep"].error


def test_bundles_and_generate_still_work(user_models: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bundles"]) == 0
    out = capsys.readouterr().out
    assert "tiny  [softmax]" in out and "deep  [?]" in out and "UNUSABLE" in out
    assert main(["generate", "-n", "1", "--max-new-tokens", "2", "--seed", "0"]) == 0
    assert "--- variant 1 · seed 0" in capsys.readouterr().out
