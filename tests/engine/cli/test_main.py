"""The `variorum` command line: generate (non-terminal output), bundles, and clear errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from engine import front_door
from engine.cli import generate_flags, main
from engine.decoding import DecodeConfig


@pytest.fixture
def bundle_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tiny_bundle: Path) -> Path:
    """Point bundle discovery at a temporary resources dir holding the tiny bundle."""
    resources = tmp_path / "resources"
    shutil.copytree(tiny_bundle, resources / "tiny")
    monkeypatch.setattr(front_door, "RESOURCES_MODELS", resources)
    monkeypatch.setattr(front_door, "user_models_dir", lambda: tmp_path / "user")
    return resources


def test_generate_prints_every_variant_with_seed(tiny_bundle: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["generate", "--bundle", str(tiny_bundle), "-n", "3", "--seed", "11", "--max-new-tokens", "6",
            "--drafts", "1"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    for index, seed in ((1, 11), (2, 12), (3, 13)):
        assert f"--- variant {index} · seed {seed} ·" in out
    assert main(argv) == 0
    assert capsys.readouterr().out == out  # same seed, same text


def test_generate_chooses_among_drafts_by_default_and_reproducibly(
    tiny_bundle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A writer starts at 2 drafts a variant: 6 drafts (seeds 11-16) for 3 variants, the same ones each run;
    a shown variant's seed with one draft writes its text again."""
    argv = ["generate", "--bundle", str(tiny_bundle), "-n", "3", "--seed", "11", "--max-new-tokens", "6"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "6 drafts are written first" in captured.err
    seeds = [int(line.split(" · ")[1].removeprefix("seed ")) for line in captured.out.splitlines()
             if line.startswith("--- variant")]
    assert len(seeds) == 3 and set(seeds) <= set(range(11, 17))
    assert main(argv) == 0
    assert capsys.readouterr().out == captured.out
    first = captured.out.split("---\n", 1)[1].split("\n--- variant", 1)[0]
    assert main(["generate", "--bundle", str(tiny_bundle), "-n", "1", "--seed", str(seeds[0]),
                 "--max-new-tokens", "6", "--drafts", "1"]) == 0
    assert capsys.readouterr().out.split("---\n", 1)[1].rstrip("\n") == first.rstrip("\n")


def test_generate_writes_real_words_unless_told_any_words(
    tiny_bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = tmp_path / "tiny"
    shutil.copytree(tiny_bundle, copy)
    argv = ["generate", "--bundle", str(copy), "-n", "2", "--seed", "3", "--max-new-tokens", "16"]
    assert main(argv) == 0
    real = capsys.readouterr()
    assert "has no words.txt" in real.err and f"variorum bundle-words --bundle {copy}" in real.err
    assert main([*argv, "--any-words"]) == 0
    anything = capsys.readouterr()
    assert "words.txt" not in anything.err and anything.out != real.out  # the untrained model invents words
    (copy / "words.txt").write_text("the\ndog\n")
    assert main(argv) == 0
    assert "words.txt" not in capsys.readouterr().err


def test_generate_uses_first_bundled_model_by_default(bundle_dirs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["generate", "-n", "1", "--max-new-tokens", "3", "--seed", "0"]) == 0
    assert "--- variant 1 · seed 0" in capsys.readouterr().out


def test_bundles_lists_usable_and_broken(bundle_dirs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = bundle_dirs / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{not json")
    assert main(["bundles"]) == 0
    out = capsys.readouterr().out
    assert "tiny  [softmax]" in out and "An untrained two-layer model" in out
    assert "broken  [?]" in out and "UNUSABLE: config.json is not valid JSON" in out


def test_bundles_prints_a_card_as_written(bundle_dirs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    card = bundle_dirs / "tiny" / "card.md"
    card.write_text("# Tiny\n\nMarks :x: and :smile: and [bold]brackets[/bold] stay as typed.\n")
    assert main(["bundles"]) == 0
    assert "Marks :x: and :smile: and [bold]brackets[/bold] stay as typed." in capsys.readouterr().out


def test_no_bundle_found_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(front_door, "RESOURCES_MODELS", tmp_path / "none")
    monkeypatch.setattr(front_door, "user_models_dir", lambda: tmp_path / "none2")
    assert main(["generate"]) == 2
    err = capsys.readouterr().err.replace("\n", " ")
    assert "no bundle for continue" in err and "build-recipe recipes/continue-f2-nmst.json" in err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--top-p", "1.5"], "--top-p must be in (0, 1] (1 = off), got 1.5"),
        (["-n", "9"], "between 1 and 8"),
        (["--max-new-tokens", "0"], "--max-new-tokens must be in [1, 4096], got 0"),
    ],
)
def test_bad_settings_exit_2_with_message(
    tiny_bundle: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    assert main(["generate", "--bundle", str(tiny_bundle), *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith("variorum generate: error:") and message in err


def test_corrupt_bundle_exit_2_without_traceback(
    tiny_bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(tiny_bundle, copy)
    (copy / "model.safetensors").write_bytes(b"\x00" * 10)
    assert main(["generate", "--bundle", str(copy)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("variorum generate: error:") and "Traceback" not in err


def test_generate_starts_where_the_bundle_says_for_the_flags_left_unset(
    tiny_bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(tiny_bundle, copy)
    config = json.loads((copy / "config.json").read_text())
    config["decode_starts"] = {"temperature": 0.8, "top_k": 40, "top_p": 0.95}
    (copy / "config.json").write_text(json.dumps(config))
    fitted: list[DecodeConfig] = []
    fit_to_model = generate_flags.fit_to_model

    def fit(*args: Any) -> DecodeConfig:
        fitted.append(fit_to_model(*args))
        return fitted[-1]

    monkeypatch.setattr(generate_flags, "fit_to_model", fit)  # run_generate imports it when it runs
    argv = ["generate", "--bundle", str(copy), "--device", "cpu", "-n", "1", "--seed", "0", "--max-new-tokens", "3"]
    assert main([*argv, "--top-k", "7"]) == 0 and "--- variant 1" in capsys.readouterr().out
    assert (fitted[-1].temperature, fitted[-1].top_k, fitted[-1].top_p) == (0.8, 7, 0.95)
    config["decode_starts"] = {"temperature": 9}
    (copy / "config.json").write_text(json.dumps(config))
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "temperature must be a number in [0.05, 3]" in err and "Traceback" not in err
