"""Each task starts with its default bundle (defaults.json), else the first usable bundle doing it."""

from __future__ import annotations

import json
from pathlib import Path

from engine.bundles.choice import choose_bundle, missing_model_message, read_defaults
from engine.front_door import BundleInfo, Engine
from engine.lm.family import lm_tasks


def _info(name: str, tasks: tuple[str, ...], error: str = "") -> BundleInfo:
    return BundleInfo(Path(name), name, "softmax", "", error, tasks)


def test_default_wins_then_first_able_bundle_then_none() -> None:
    bundles = [_info("a-story", ("story",)), _info("b-lm", ("continue",)), _info("c-lm", ("continue",)),
               _info("d-broken", ("abstract",), error="corrupt")]
    assert choose_bundle(bundles, "continue", {"continue": ["c-lm"]}).name == "c-lm"  # type: ignore[union-attr]
    assert choose_bundle(bundles, "continue", {"continue": ["a-story"]}).name == "b-lm"  # type: ignore[union-attr]
    # the first usable of the preferences: a pretrained default whose base is missing is unusable
    unusable_first = [_info("pretrained", ("continue",), error="needs the base"), *bundles]
    chosen = choose_bundle(unusable_first, "continue", {"continue": ["pretrained", "c-lm"]})
    assert chosen is not None and chosen.name == "c-lm"
    assert choose_bundle(bundles, "story", {}).name == "a-story"  # type: ignore[union-attr]
    assert choose_bundle(bundles, "abstract", {}) is None  # the only abstract bundle is unusable


def test_defaults_files_earlier_folder_wins_and_bad_files_are_ignored(tmp_path: Path) -> None:
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    (tmp_path / "bad").mkdir()
    (tmp_path / "one" / "defaults.json").write_text(json.dumps({"story": "mine"}))
    (tmp_path / "two" / "defaults.json").write_text(json.dumps({"story": "theirs", "continue": ["big", "lm"],
                                                                "paraphrase": {"not": "a name"}}))
    (tmp_path / "bad" / "defaults.json").write_text("{not json")
    folders = [tmp_path / "one", tmp_path / "bad", tmp_path / "two", tmp_path / "missing"]
    assert read_defaults(folders) == {"story": ["mine"], "continue": ["big", "lm"]}


def test_engine_reads_tasks_from_config_and_names_the_recipe(tiny_bundle: Path) -> None:
    engine = Engine(search_dirs=[tiny_bundle.parent])
    assert engine.list_bundles()[0].tasks == lm_tasks()  # and paraphrase, where rewording is installed
    assert engine.default_bundle("continue").path == tiny_bundle  # type: ignore[union-attr]
    assert engine.default_bundle("abstract") is None
    assert "variorum build-recipe recipes/permgen-abstract.json" in missing_model_message("abstract")


def test_a_missing_paraphraser_names_the_packages_that_bring_it() -> None:
    message = missing_model_message("paraphrase")
    assert ".ci/setup-venv pos" in message and "variorum[pos]" in message
    assert "variorum build-recipe recipes/permgen-paraphrase.json" in message
