"""`variorum build-recipe recipes/<name>.json`: build a shipped bundle from its recipe, then measure it.

A recipe is the trainer's own `--config` file (sections "model", "train", and for PermGen
"permgen") plus a "recipe" section this command reads:

    {"recipe": {"name": "permgen-story", "trainer": "train-permgen",
                "baseline": "resources/models/permgen-story",       (or null, or another
                                      recipe's "runs/recipes/<its name>/bundle": a method's baseline run)
                "eval": ["--split", "rocstories_story", "--max-sources", "100"],
                "diagnose_files": ["../shared/data/…"],            (language models only; optional)
                "case_from": ["../shared/data/…"]},                (optional: cased files, see below)
     "model": {…}, "permgen": {…}, "train": {…}}

Steps: train on the best device present (`--device auto`: CUDA when there, else CPU) into
`runs/recipes/<name>` (`--chunk-steps K` stops after K steps with a checkpoint, `--resume` goes
on from it); once training has reached its last step, run `variorum eval` of the new bundle
beside its baseline (and `variorum diagnose` for language models) and append those tables, with
the commands that made them, to the bundle's card.md. A model trained on lowercased text gets its
case table (`case.json`, learnt from the recipe's "case_from" files: engine/bundles/words.py) before
it is measured. Copy the bundle into resources/models
(or a models folder) to ship it.

The name is a plain folder name (no path separators, no `..`, not hidden), so a recipe never
writes outside `runs/recipes`; only `--out-dir`, typed by the user, chooses another folder.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import shlex
import sys
from pathlib import Path
from typing import Any

from engine.bundles.bundle import CARD_FILE
from engine.bundles.words import write_case_table
from engine.config import ConfigError
from engine.devices import DEVICE_CHOICES, resolve_device
from engine.families import ModelFamily, model_families
from engine.files.atomic_writes import write_text_atomic
from engine.files.small_reads import UnusableFileError, read_small_json
from engine.training.checkpoint import read_checkpoint_state
from engine.training.loop import training_finished

RECIPES_OUT = Path("runs") / "recipes"
EVAL_HEADING = "\n## Evaluation against the baseline (variorum build-recipe)\n"


def read_recipe(path: Path) -> dict[str, Any]:
    """The recipe section of `path`, checked (ConfigError naming the file and the problem)."""
    try:
        data = read_small_json(Path(path), f"recipe {path}")
    except UnusableFileError as error:
        raise ConfigError(str(error)) from None
    recipe = data.get("recipe") if isinstance(data, dict) else None
    if not isinstance(recipe, dict) or not recipe.get("name"):
        raise ConfigError(f"recipe {path}: needs a \"recipe\" section with a \"name\"")
    if not is_plain_name(recipe["name"]):
        raise ConfigError(f"recipe {path}: \"name\" must be a plain folder name (letters, digits, '-', '_', '.'; "
                          f"no path separators or '..'), got {recipe['name']!r}")
    if recipe.get("trainer") not in (trainers := trainer_families()):
        raise ConfigError(f"recipe {path}: \"trainer\" must be one of {list(trainers)}, got {recipe.get('trainer')!r}")
    if not all(isinstance(recipe.get(key, []), list) for key in ("eval", "diagnose_files", "case_from")):
        raise ConfigError(f"recipe {path}: \"eval\", \"diagnose_files\" and \"case_from\" must be lists of strings")
    return recipe


def is_plain_name(name: object) -> bool:
    """Whether `name` names one folder inside runs/recipes: never a path, `..`, or a hidden folder."""
    return (isinstance(name, str) and re.fullmatch(r"[A-Za-z0-9_.-]+", name) is not None
            and not name.startswith(".") and len(name) <= 100)


def trainer_families() -> dict[str, ModelFamily]:
    """Every family by its trainer command, the name a recipe's "trainer" gives (engine/families)."""
    return {family.trainer: family for family in model_families()}


def _captured(main: Any, argv: list[str]) -> tuple[int, str]:
    """Run a command's main(argv), echoing and returning what it printed."""
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = int(main(argv))
    print(buffer.getvalue(), end="")
    return code, buffer.getvalue()


def evaluate_into_card(recipe: dict[str, Any], bundle: Path, device: str) -> int:
    """Run eval (and diagnose for LMs) against the baseline; append the tables and commands to card.md."""
    from engine.diagnostics.cli import main as diagnose_main
    from engine.evaluation.run import main as eval_main

    baseline = recipe.get("baseline")
    baseline = str(Path(baseline).expanduser()) if baseline else None  # a user models folder is named with ~
    bundles = [str(bundle)] + ([baseline] if baseline and Path(baseline).is_dir() else [])
    eval_argv = ["--bundles", *bundles, *recipe.get("eval", []), "--device", device,
                 "--out", str(bundle.parent / "eval")]
    code, _ = _captured(eval_main, eval_argv)
    if code:
        return code
    report = (bundle.parent / "eval" / "report.md").read_text()
    note = "" if len(bundles) > 1 else f"\n(No baseline bundle at {baseline!r}: this bundle alone.)\n"
    section = [f"{EVAL_HEADING}\n{note}",
               f"Command: `variorum eval {shlex.join(eval_argv)}`\n", _demote(report)]
    if recipe.get("trainer") == "train" and recipe.get("diagnose_files"):
        diagnose_argv = [arg for b in bundles for arg in ("--bundle", b)] + ["--files", *recipe["diagnose_files"]]
        code, printed = _captured(diagnose_main, diagnose_argv)
        if code:
            return code
        section += [f"\nDiagnostics: `variorum diagnose {shlex.join(diagnose_argv)}`\n",
                    f"```\n{printed.strip()}\n```\n"]
    card = (bundle / CARD_FILE).read_text().split(EVAL_HEADING)[0].rstrip("\n")  # a re-run replaces its section
    write_text_atomic(bundle / CARD_FILE, card + "\n" + "\n".join(section))
    return 0


def _demote(markdown: str) -> str:
    """The report's headings one level down, so they nest under the card's section."""
    return "\n".join("##" + line if line.startswith("#") else line for line in markdown.splitlines()) + "\n"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="variorum build-recipe", description=__doc__.splitlines()[0])
    p.add_argument("recipe", type=Path, help="recipes/<name>.json")
    p.add_argument("--device", default="auto", choices=DEVICE_CHOICES, help="auto = CUDA when present, else CPU")
    p.add_argument("--out-dir", type=Path, help="default: runs/recipes/<name>")
    p.add_argument("--chunk-steps", type=int, default=0, help="stop after this many steps with a checkpoint")
    p.add_argument("--resume", action="store_true", help="continue from the checkpoint in the out dir")
    p.add_argument("--compile", action="store_true", help="CUDA, language models: torch.compile the training step")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    try:
        recipe = read_recipe(args.recipe)
        device = resolve_device(args.device).type
    except ConfigError as error:
        print(f"variorum build-recipe: error: {error}", file=sys.stderr)
        return 2
    out = args.out_dir or RECIPES_OUT / recipe["name"]
    train_argv = ["--config", str(args.recipe), "--device", device, "--out-dir", str(out)]
    train_argv += ["--resume"] * args.resume + (["--chunk-steps", str(args.chunk_steps)] if args.chunk_steps else [])
    train_argv += ["--compile"] * (args.compile and recipe["trainer"] == "train")
    print(f"variorum {recipe['trainer']} {shlex.join(train_argv)}  (on {device})", flush=True)
    code = trainer_families()[recipe["trainer"]].train(train_argv)
    if code:
        return code
    bundle = out / "bundle"
    state = read_checkpoint_state(out / "checkpoint") or {}
    step, last = state.get("step", 0), state.get("train", {}).get("max_steps", 0)
    if not training_finished(state) or not (bundle / CARD_FILE).is_file():
        print(f"chunk done at step {step} of {last}: run the same command with --resume to go on")
        return 0
    if recipe.get("case_from"):
        path, count = write_case_table(bundle, [Path(f) for f in recipe["case_from"]])
        print(f"wrote the case of {count} words to {path}")
    code = evaluate_into_card(recipe, bundle, device)
    if code == 0:
        print(f"bundle with its measured card: {bundle} (copy it to resources/models/{recipe['name']} to ship it)")
    return code
