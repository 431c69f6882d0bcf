"""The README's benchmark commands run as written: defaults on the shared data, clear errors otherwise."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from engine import packed_linear
from engine.benchmarks import (
    f2_compare,
    nmst_termination,
    packed_products,
    posg_compare,
    train_profile,
    train_speed,
)
from engine.benchmarks.head_compare import ROC_TRAIN_FILES, comparison_parser


def test_head_comparisons_train_on_the_shared_roc_files_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VARIORUM_DATA", str(tmp_path))
    args = comparison_parser("test", Path("runs/test")).parse_args([])
    assert args.train_files == [str(tmp_path / name) for name in ROC_TRAIN_FILES]


@pytest.mark.parametrize("benchmark", [f2_compare, posg_compare])
def test_missing_default_data_names_the_expected_path(
    benchmark: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("VARIORUM_DATA", str(tmp_path))
    with pytest.raises(SystemExit) as exit_info:
        benchmark.main(["--out", str(tmp_path / "out")])  # type: ignore[attr-defined]
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert f"training data not found: {tmp_path / ROC_TRAIN_FILES[0]}" in err and "Traceback" not in err


def test_help_shows_the_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        f2_compare.main(["--help"])
    out = capsys.readouterr().out
    assert "training steps per model (default: 300)" in out
    assert ROC_TRAIN_FILES[0] in "".join(out.split())  # argparse wraps the long path


def test_nmst_without_bundles_prints_the_commands_that_train_them(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        nmst_termination.main([])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    for name in ("va", "st", "nmst"):
        assert f"--out-dir runs/nmst_short/{name} --termination {name}" in err
    assert "--bundle NMST=runs/nmst_short/nmst/bundle" in err


def test_the_packed_products_benchmark_compares_and_puts_the_shipped_products_back(
    tiny_bundle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shipped = packed_linear.project, packed_linear.linear
    packed_products.main(["--bundle", str(tiny_bundle), "--shapes", "2x5", "--rounds", "1"])
    assert (packed_linear.project, packed_linear.linear) == shipped
    out = capsys.readouterr().out
    row = out.splitlines()[-1].split()
    assert row[:3] == ["2", "×", "5"] and float(row[-1]) > 0
    assert "packed copies of the blocks' matrices" in out


@pytest.mark.parametrize(("benchmark", "model_flags", "help_lines"), [
    (train_speed, ["--models", "lm"], ["training steps of each way (the first is warm-up) (default: 12)",
                                       "default: the recipe's"]),
    (train_profile, ["--model", "lm"], ["steps before profiling (the first compiles) (default: 4)"]),
])
def test_training_benchmarks_name_missing_data_and_show_their_defaults(
    benchmark: ModuleType, model_flags: list[str], help_lines: list[str], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("VARIORUM_DATA", str(tmp_path))
    with pytest.raises(SystemExit, match=f"training data not found: {tmp_path}/rocstories/"):
        benchmark.main([*model_flags, "--out", str(tmp_path / "out")])
    with pytest.raises(SystemExit):
        benchmark.main(["--help"])
    out = " ".join(capsys.readouterr().out.split())
    for line in help_lines:
        assert line in out


def test_pos_bias_prompts_are_first_sentences_of_held_out_stories(tmp_path: Path) -> None:
    from engine.benchmarks.pos_bias import ROC_FILES, held_out_prompts
    from engine.data.corpus import is_validation

    stories = [f"Story {i} begins here. It goes on." for i in range(400)]
    (tmp_path / ROC_FILES[0]).parent.mkdir(parents=True)
    (tmp_path / ROC_FILES[0]).write_text("".join(f'["{s}"]\n' for s in stories))
    prompts = held_out_prompts(tmp_path, 5)
    held_out = [s for s in stories if is_validation(s, 0.05)]
    assert prompts == [s.split(". ")[0] + "." for s in held_out[:5]] and len(prompts) == 5
