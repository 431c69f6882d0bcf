"""Every `variorum` subcommand answers bad input with one `variorum <cmd>: error: …` line on stderr and exit 2."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from engine.cli import main
from engine.cli.main import build_parser

TAKES_NO_PATH = {"bundles"}  # lists the bundle folders; see cli/test_main.py


def subcommands() -> set[str]:
    action = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return set(action.choices)


def missing_path_argv(command: str, tmp_path: Path) -> list[str]:
    """A complete command line for `command` whose input path does not exist."""
    missing = str(tmp_path / "missing")
    out = str(tmp_path / "out")
    return {
        "generate": ["generate", "--bundle", missing],
        "train": ["train", "--train-files", missing, "--out-dir", out],
        "train-permgen": ["train-permgen", "--train-files", missing, "--out-dir", out],
        "perplexity": ["perplexity", "--bundle", missing, "--files", missing],
        "diagnose": ["diagnose", "--bundle", missing, "--files", missing],
        "build-recipe": ["build-recipe", missing + ".json"],
        "eval": ["eval", "--bundles", missing, "--split-file", missing, "--out", out],
        "export-onnx": ["export-onnx", "--bundle", missing],
        "bundle-words": ["bundle-words", "--bundle", missing],
        "import": ["import", missing, "--out", out],
        "get-base": ["get-base", "--wheel", missing, "--data-dir", out, "--models-dir", out],
        "fit-scorer": ["fit-scorer", "--val", missing, "--test", missing, "--out", out],
    }[command]


def assert_one_error_line(command: str, capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"variorum {command}: error: "), err
    assert "Traceback" not in err
    return lines[0]


@pytest.mark.parametrize("command", sorted(subcommands() - TAKES_NO_PATH))
def test_missing_path_is_one_error_line_and_exit_2(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(missing_path_argv(command, tmp_path)) == 2
    assert str(tmp_path / "missing") in assert_one_error_line(command, capsys)


@pytest.mark.parametrize("command", ["perplexity", "diagnose"])
def test_too_little_text_is_one_error_line(
    command: str, tiny_bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    short = tmp_path / "short.txt"
    short.write_text("One short line.\n")
    assert main([command, "--bundle", str(tiny_bundle), "--files", str(short), "--all"]) == 2
    assert_one_error_line(command, capsys)
