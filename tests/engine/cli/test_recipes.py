"""`variorum build-recipe` on a tiny recipe: trains in resumable chunks on the best device present,
then evaluates against the baseline and writes the tables into the bundle's card."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from engine.cli import main as cli_main
from engine.cli.recipes import read_recipe
from engine.config import ConfigError
from tests.conftest import STORIES
from tests.engine.evaluation.conftest import TINY_SPLIT

RECIPES = Path(__file__).parents[3] / "recipes"
CASED = Path(__file__).parents[2] / "fixtures" / "readers" / "cased_names.txt"


def _recipe(tmp_path: Path, baseline: Path) -> Path:
    recipe = {
        "recipe": {"name": "tiny", "trainer": "train", "baseline": str(baseline),
                   "eval": ["--split-file", str(TINY_SPLIT), "--prefix-len", "8", "--continuation-len", "8",
                            "--max-windows", "4", "--decoders", "greedy", "--nmst-windows", "1",
                            "--nmst-max-length", "8", "--nmst-lengths", "8"],
                   "diagnose_files": [str(STORIES)], "case_from": [str(CASED)]},
        "model": {"vocab_size": 300, "n_layer": 1, "n_head": 2, "n_embd": 16, "block_size": 16},
        "train": {"train_files": [str(STORIES)], "batch_size": 2, "max_steps": 4, "eval_every": 2, "eval_batches": 1,
                  "warmup_steps": 1, "save_every": 100, "valid_fraction": 0.2},
    }
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(recipe))
    return path


def test_chunks_then_resume_then_card_with_the_tables(tmp_path: Path, tiny_bundle: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    recipe, out = _recipe(tmp_path, tiny_bundle), tmp_path / "out"
    assert cli_main(["build-recipe", str(recipe), "--out-dir", str(out), "--chunk-steps", "2"]) == 0
    assert "chunk done at step 2 of 4" in capsys.readouterr().out and not (out / "bundle").exists()
    assert cli_main(["build-recipe", str(recipe), "--out-dir", str(out), "--resume"]) == 0
    assert [json.loads(line)["step"] for line in (out / "metrics.jsonl").read_text().splitlines()] == [1, 2, 3, 4]
    card = (out / "bundle" / "card.md").read_text()
    assert "## Evaluation against the baseline" in card and "variorum eval --bundles" in card
    assert "Invented %" in card and tiny_bundle.name in card  # the baseline's row sits beside the new bundle
    assert "variorum diagnose --bundle" in card
    assert json.loads((out / "bundle" / "case.json").read_text())["forms"] == {"ben": "Ben", "sam": "Sam"}
    assert not re.search(r"[\s`]/", card.split("## Evaluation")[0])  # the trainer's part: no absolute path
    assert cli_main(["build-recipe", str(recipe), "--out-dir", str(out), "--resume"]) == 0  # re-run: one section
    assert (out / "bundle" / "card.md").read_text().count("## Evaluation against the baseline") == 1


def test_bad_recipes_are_clear_errors(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(json.dumps({"recipe": {"name": "x", "trainer": "fit"}}))
    with pytest.raises(ConfigError, match="trainer"):
        read_recipe(tmp_path / "a.json")
    (tmp_path / "b.json").write_text("{")
    with pytest.raises(ConfigError, match=r"recipe .*b\.json is not valid JSON"):
        read_recipe(tmp_path / "b.json")


@pytest.mark.parametrize("name", ["../../../victim", "/nonexistent/victim", "a/b", "..", ".", ".hidden", "a\\b", "",
                                  "ok\x00", 7])
def test_a_recipe_name_must_be_a_plain_folder_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str], name: object) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "mine.txt").write_text("keep")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    recipe = work / "r.json"
    recipe.write_text(json.dumps({"recipe": {"name": name, "trainer": "train"}, "train": {"max_steps": 1}}))
    assert cli_main(["build-recipe", str(recipe)]) == 2
    assert "\"name\" must be a plain folder name" in capsys.readouterr().err or name == ""
    assert (victim / "mine.txt").read_text() == "keep" and list(work.iterdir()) == [recipe]


@pytest.mark.parametrize("path", sorted(RECIPES.glob("*.json")), ids=lambda p: p.name)
def test_shipped_recipes_are_valid_trainer_configs(path: Path) -> None:
    from engine.config import ModelConfig, TrainConfig, config_from_dict
    from engine.permgen.config import PermGenConfig

    recipe = read_recipe(path)
    data = json.loads(path.read_text())
    # A decoder-only PermGen recipe fine-tunes a Llama start, whose model section its own overrides
    llama = {"backbone": "llama", "n_head": 9, "n_kv_head": 3, "n_embd": 576, "block_size": 8192}
    decoder_only = data.get("permgen", {}).get("layout") == "decoder-only"
    model = config_from_dict(ModelConfig, {**(llama if decoder_only else {}), **data["model"]})
    config_from_dict(TrainConfig, data["train"])
    if recipe["trainer"] == "train-permgen":
        config_from_dict(PermGenConfig, {**data["permgen"], "model": model})


def test_every_shipped_recipe_compares_with_a_bundle_that_ships() -> None:
    """A rebuilt model is measured beside what ships today, or beside the bundle another recipe builds (a
    method's baseline run on the same base, data and steps), so a recipe's baseline must exist or be built."""
    root = Path(__file__).parents[3]
    for path in sorted((root / "recipes").glob("*.json")):
        baseline = json.loads(path.read_text())["recipe"]["baseline"]
        built = Path(baseline or "").parts[:2] == ("runs", "recipes") and Path(baseline).name == "bundle"
        recipe_of = root / "recipes" / f"{Path(baseline or '').parent.name}.json"
        assert (baseline is None or (root / baseline / "config.json").is_file()
                or (built and recipe_of.is_file() and recipe_of != path)), f"{path.name}: {baseline} is missing"
