"""A bundle on a checkpoint checks every file of the checkpoint it reads, not only the weights, before reading it."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.bundles.imported import import_checkpoint
from engine.cli import main

DEEP = "[" * 100_000 + "]" * 100_000


def _imported(folder: Path, tmp_path: Path) -> tuple[Path, Path]:
    checkpoint = Path(shutil.copytree(folder, tmp_path / folder.name))
    return checkpoint, import_checkpoint(str(checkpoint), tmp_path / "bundle", {"HOME": "/nonexistent"})


def _fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def _generate(bundle: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    capsys.readouterr()
    status = main(["generate", "--bundle", str(bundle), "--device", "cpu", "--prompt", "The cat", "--max-new-tokens",
                   "2"])
    return status, [line for line in capsys.readouterr().err.splitlines() if "it/s]" not in line]


@pytest.mark.parametrize(("name", "damage", "problem"), [
    ("config.json", lambda p: p.write_text(DEEP), "has changed since the bundle was made"),
    ("config.json", lambda p: p.write_text(p.read_text().replace('"gelu_new"', '"relu"')), "has changed"),
    ("config.json", _fifo, "is a device, FIFO or socket, not a regular file now"),
    ("merges.txt", lambda p: p.write_text("#version: 0.2\n"), "has changed"),
    ("vocab.json", lambda p: p.unlink(), "does not exist now"),
])
def test_a_base_checkpoint_file_changed_after_the_import_is_one_line(
        name: str, damage: Callable[[Path], None], problem: str, gpt2_folder: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    checkpoint, bundle = _imported(gpt2_folder, tmp_path)
    assert set(json.loads((bundle / "config.json").read_text())["base"]["files_sha256"]) == {
        "config.json", "vocab.json", "merges.txt", "generation_config.json"}
    damage(checkpoint / name)
    status, lines = _generate(bundle, capsys)
    assert status == 2 and len(lines) == 1 and lines[0].startswith("variorum generate: error: "), lines
    assert f"{name} of its base checkpoint {checkpoint} {problem}" in lines[0]


def test_a_bundle_made_before_the_files_were_hashed_still_loads(gpt2_folder: Path, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    _, bundle = _imported(gpt2_folder, tmp_path)
    config = json.loads((bundle / "config.json").read_text())
    del config["base"]["files_sha256"]
    (bundle / "config.json").write_text(json.dumps(config))
    assert _generate(bundle, capsys)[0] == 0
