"""Derandomized fuzzing of what a bundle, a models folder and the command line read from disk: any file
of a bundle replaced by something hostile, any config section of any JSON type, any path of the wrong
kind on a command line. Each input loads, or is refused with one clear line; it never hangs, never
fills memory, never ends in a traceback. The tally is printed at the end (fuzz_support.print_tally)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.bundles.bundle import BundleError, load_model_bundle
from engine.cli import main as cli_main
from engine.front_door import describe_bundle
from tests.conftest import STORIES
from tests.engine.fuzz_support import (
    WRONG_TYPES,
    bundle_copy,
    print_tally,  # noqa: F401  # a module-scoped autouse fixture: prints the tally
    record,
)

FUZZ = settings(derandomize=True, deadline=None, database=None, suppress_health_check=list(HealthCheck),
                max_examples=40)
FILES = ["config.json", "token_counts.json", "tokenizer.json", "card.md", "model.safetensors", "words.txt"]
DEEP = "[" * 50_000 + "]" * 50_000


def _replace(path: Path, damage: str) -> None:
    """Put something hostile where `path` was."""
    if path.exists() or path.is_symlink():
        data = path.read_bytes()
        path.unlink()
    else:
        data = b""
    if damage == "fifo":
        os.mkfifo(path)
    elif damage == "dev-zero":
        path.symlink_to("/dev/zero")
    elif damage == "dangling":
        path.symlink_to(path.parent / "nowhere")
    elif damage == "folder":
        path.mkdir()
    else:
        path.write_bytes({"deep": DEEP.encode(), "binary": b"\xff\xfe\x00\x81" * 10, "empty": b"",
                          "half": data[: len(data) // 2], "bom-latin1": b"\xef\xbb\xbf\xe9t\xe9"}[damage])


_DAMAGES = st.sampled_from(["fifo", "dev-zero", "dangling", "folder", "deep", "binary", "empty", "half",
                            "bom-latin1"])
_JSON_VALUES = st.sampled_from([*WRONG_TYPES, "x", 0, -1, [], {}, {"train": "x"}, {"train": {"train_files": 3}},
                                {"task": 5}, {"model": []}])


@given(name=st.sampled_from(FILES), damage=_DAMAGES, kind=st.sampled_from(["lm", "permgen"]))
@settings(FUZZ, max_examples=120)
def test_any_bundle_file_replaced(name: str, damage: str, kind: str) -> None:
    """Each file of a bundle replaced by a FIFO, a link to /dev/zero, a folder, deep or binary bytes."""

    def run() -> None:
        with bundle_copy(kind) as bundle:
            _replace(bundle / name, damage)
            describe_bundle(bundle)  # the listing never raises
            load_model_bundle(bundle)

    record("bundle-file", run, lambda e: isinstance(e, BundleError) and name.split(".", maxsplit=1)[0] in str(e))


@given(section=st.sampled_from(["model", "permgen", "provenance", "kind", "format_version"]), value=_JSON_VALUES,
       kind=st.sampled_from(["lm", "permgen"]))
@settings(FUZZ, max_examples=80)
def test_any_config_section_of_any_type(section: str, value: object, kind: str) -> None:
    """A config.json section of any JSON type: listed without raising, then loaded or refused."""

    def run() -> None:
        with bundle_copy(kind) as bundle:
            config = json.loads((bundle / "config.json").read_text())
            config[section] = value
            (bundle / "config.json").write_text(json.dumps(config))
            describe_bundle(bundle)  # the listing never raises
            load_model_bundle(bundle)

    record("config-section", run, lambda e: isinstance(e, BundleError))


_PATH_KINDS: dict[str, Callable[[Path], Path]] = {
    "missing": lambda root: root / "missing",
    "folder": lambda root: root,
    "fifo": lambda root: (os.mkfifo(root / "fifo"), root / "fifo")[1],
    "dev-zero": lambda root: ((root / "zero").symlink_to("/dev/zero"), root / "zero")[1],
    "under-a-file": lambda root: STORIES / "x",
}


@given(command=st.sampled_from(["perplexity-files", "train-config", "build-recipe", "diagnose-png", "eval-out"]),
       path_kind=st.sampled_from(sorted(_PATH_KINDS)))
@settings(FUZZ)
def test_any_path_of_the_wrong_kind_on_the_command_line(command: str, path_kind: str, tmp_path_factory:
                                                        pytest.TempPathFactory) -> None:
    """Exit 2 with one `variorum <cmd>: error:` line (the bundle given is missing: paths are checked first)."""

    def run() -> None:
        root = tmp_path_factory.mktemp("paths")
        path, missing = str(_PATH_KINDS[path_kind](root)), str(root / "no-bundle")
        argv = {"perplexity-files": ["perplexity", "--bundle", missing, "--files", path],
                "train-config": ["train", "--train-files", str(STORIES), "--config", path, "--out-dir", missing],
                "build-recipe": ["build-recipe", path],
                "diagnose-png": ["diagnose", "--bundle", missing, "--files", str(STORIES), "--png", path],
                "eval-out": ["eval", "--bundles", missing, "--split-file", str(STORIES), "--out", path]}[command]
        assert cli_main(argv) == 2

    record("cli-path", run, lambda e: False)
