"""`variorum eval` on two tiny bundles and our tiny split writes the Markdown/JSON/PNG report."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from engine.cli import main as cli_main
from engine.evaluation.protocols import ProtocolConfig
from engine.evaluation.run import check_drafts_specs, main
from tests.engine.evaluation.conftest import TINY_SPLIT

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
FLAGS = ["--prefix-len", "8", "--continuation-len", "12", "--max-windows", "12", "--decoders", "topk=5", "greedy",
         "--nmst-decoders", "greedy", "--nmst-max-length", "20", "--nmst-windows", "4", "--nmst-lengths", "5", "20",
         "--seed", "3"]


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory: pytest.TempPathFactory, two_bundles: list[Path]) -> Path:
    out = tmp_path_factory.mktemp("eval") / "report"
    argv = ["eval", "--bundles", *map(str, two_bundles), "--split-file", str(TINY_SPLIT), "--out", str(out), *FLAGS]
    assert cli_main(argv) == 0
    return out


def test_report_files_exist_and_plots_are_pngs(report_dir: Path) -> None:
    names = {"report.json", "report.md", "frequency_groups.png", "eos_curves.png", "non_termination.png",
             "tradeoff.png"}
    assert names <= {p.name for p in report_dir.iterdir()}
    for png in report_dir.glob("*.png"):
        assert png.read_bytes()[:8] == PNG_MAGIC and png.stat().st_size > 1000


def test_json_records_command_seeds_hashes_and_every_table(report_dir: Path, two_bundles: list[Path]) -> None:
    report = json.loads((report_dir / "report.json").read_text())
    assert report["command"].startswith("variorum eval --bundles") and "--seed 3" in report["command"]
    assert report["settings"]["seed"] == 3 and report["settings"]["decoders"] == ["topk=5", "greedy"]
    assert len(report["split"]["sha256"]) == 64 and report["split"]["files"][0]["sha256"]
    assert [b["path"] for b in report["bundles"]] == [str(p) for p in two_bundles]
    assert report["bundles"][0]["sha256"] != report["bundles"][1]["sha256"]
    for bundle in report["bundles"]:
        result = bundle["result"]
        assert set(result["lm"]) == {"topk=5", "greedy"}
        for metrics in result["lm"].values():
            assert all(v is None or math.isfinite(v) for v in metrics.values())
            assert metrics["ppl"] == result["agg"]["ppl_total"] > 1
            assert 0 <= metrics["self_bleu_4"] <= 1 and metrics["uniq"] >= 1
        assert sum(result["shares"]["topk=5"]) == pytest.approx(1.0)
        assert 0 < result["agg"]["isotropy"] <= 1
        assert set(result["nmst"]["greedy"]["r_nt"]) == {"5", "20"} and len(result["nmst"]["greedy"]["curve"]) == 20
    assert report["bundles"][1]["result"]["nmst"]["greedy"]["r_nt"]  # the ST bundle has its termination row
    human = report["human"]
    assert "kld" not in human["lm"] and human["lm"]["self_bleu_4"] is not None and human["windows"] == 12


def test_markdown_puts_bundles_side_by_side_with_a_human_row(report_dir: Path, two_bundles: list[Path]) -> None:
    text = (report_dir / "report.md").read_text()
    for heading in ("Continuations", "Frequency groups", "Termination"):
        assert heading in text
    for path in two_bundles:
        assert f"| {path.name} | topk=5 |" in text and f"| {path.name} | greedy |" in text
    assert text.count("| Human |") == 3  # LM, AGG and shares tables; NMST has no human row
    assert "variorum eval --bundles" in text


def test_same_seed_same_numbers(report_dir: Path, two_bundles: list[Path], tmp_path: Path) -> None:
    argv = ["--bundles", str(two_bundles[0]), "--split-file", str(TINY_SPLIT), "--out", str(tmp_path), *FLAGS]
    assert main(argv) == 0
    again = json.loads((tmp_path / "report.json").read_text())["bundles"][0]["result"]
    first = json.loads((report_dir / "report.json").read_text())["bundles"][0]["result"]
    for decoder, metrics in first["lm"].items():
        assert again["lm"][decoder] == pytest.approx(metrics, rel=1e-6)  # same tokens → same metrics
    assert again["nmst"]["greedy"]["curve"] == first["nmst"]["greedy"]["curve"]
    assert again["shares"] == first["shares"]


def test_bad_input_gives_clear_errors(
    two_bundles: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--bundles", str(tmp_path / "none"), "--split-file", str(TINY_SPLIT)]) == 2
    assert "does not exist" in capsys.readouterr().err
    argv = ["--bundles", str(two_bundles[0]), "--split-file", str(TINY_SPLIT), "--decoders", "beam=3"]
    assert main(argv) == 2
    assert "unknown part" in capsys.readouterr().err
    argv = ["--bundles", str(two_bundles[0]), "--split-file", str(TINY_SPLIT), "--nmst-lengths", "500"]
    assert main(argv) == 2


def test_drafts_are_chosen_in_eval_and_refused_where_nothing_is_chosen(
    two_bundles: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "drafts"
    argv = ["--bundles", str(two_bundles[0]), "--split-file", str(TINY_SPLIT), "--out", str(out), "--prefix-len", "8",
            "--continuation-len", "12", "--max-windows", "4", "--decoders", "topk=5,drafts=2", "--nmst-decoders",
            "greedy", "--nmst-max-length", "20", "--nmst-windows", "2", "--nmst-lengths", "5", "--no-invented-words"]
    assert main(argv) == 0
    assert "drafts chosen by this model's own sense of fit" in capsys.readouterr().err
    report = json.loads((out / "report.json").read_text())
    assert "topk=5,drafts=2" in report["bundles"][0]["result"]["lm"]
    check_drafts_specs("story", ProtocolConfig(decoders=("topk=5,drafts=2",)))
    for task, config in [("paraphrase", ProtocolConfig(decoders=("drafts=2",))),
                         ("story", ProtocolConfig(decoders=("drafts=2",), beam_width=3))]:
        with pytest.raises(ValueError, match="decoder 'drafts=2': choosing among drafts"):
            check_drafts_specs(task, config)
