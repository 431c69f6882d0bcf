"""Error lines name the real cause (a folder where a file belongs, a malformed flag, an unreadable or
binary file), and an output path that cannot be written is refused before any work is done."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.cli import main
from tests.conftest import STORIES

DEEP = "[" * 100_000 + "]" * 100_000


def _error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def test_a_folder_given_as_a_corpus_file_is_called_a_folder(tiny_bundle: Path, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    line = _error(["perplexity", "--bundle", str(tiny_bundle), "--files", str(tmp_path)], capsys)
    assert line.endswith(f"corpus file {tmp_path} is a folder, not a file")
    line = _error(["bundle-words", "--bundle", str(tiny_bundle), "--files", str(tmp_path)], capsys)
    assert line.endswith(f"training file {tmp_path} is a folder, not a file")


def test_a_file_given_as_a_bundle_is_called_a_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert _error(["export-onnx", "--bundle", str(STORIES)], capsys).endswith("is a file, not a bundle folder")


def test_a_sentence_order_that_is_not_numbers_names_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    line = _error(["generate", "--task", "story", "--title", "A day", "--sentence-order", "a,b"], capsys)
    assert "--sentence-order takes a first sentence k or a full order such as 3,1,2; got 'a,b'" in line


def test_diagnose_refuses_a_folder_for_png_before_loading_anything(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["diagnose", "--bundle", str(tmp_path / "missing"), "--files", str(STORIES), "--png", str(tmp_path)]
    assert f"--png {tmp_path} is a folder" in _error(argv, capsys)  # not the missing bundle: checked first
    assert not tmp_path.with_suffix(".png").exists()


def test_eval_refuses_an_unwritable_out_before_evaluating(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["eval", "--bundles", str(tmp_path / "missing"), "--split-file", str(STORIES),
            "--out", str(STORIES / "report")]
    assert "--out" in _error(argv, capsys)


@pytest.mark.parametrize(("content", "cause"), [(DEEP, "is nested too deeply"), (b"\xff\xfe\x00", "not UTF-8")])
@pytest.mark.parametrize("command", ["train", "build-recipe"])
def test_a_deep_or_binary_config_is_one_error_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   content: str | bytes, cause: str, command: str) -> None:
    config = tmp_path / "config.json"
    config.write_bytes(content.encode() if isinstance(content, str) else content)
    argv = (["train", "--train-files", str(STORIES), "--config", str(config), "--out-dir", str(tmp_path / "o")]
            if command == "train" else ["build-recipe", str(config)])
    assert cause in _error(argv, capsys)
