"""`variorum eval`: run the papers' protocols for several bundles on one split and write the report.

    variorum eval --bundles runs/a/bundle runs/b/bundle --split rocstories --out runs/eval/roc \\
        --decoders topp=0.9 topk=20 greedy --nmst-decoders greedy topk=4

Each generated table also gets the invented-word rate (words that are not real words: training
words, the word list, the prompts' words; engine/word_sources.py) and the unseen-word rate (words
not in the training text; engine/metrics/invented.py). The training words are the bundle's
`words.txt`, else rebuilt from the training files it records (`--train-files` to give them,
`--no-invented-words` to skip). The default decoders are nucleus sampling with real words off and
on (`topp=0.9`, `topp=0.9,words`).

Writes report.json (all numbers, the exact command, seeds, split and bundle hashes),
report.md (tables, bundles side by side, human row) and four PNG plots, with a progress bar.

The split's task picks the protocol, and every bundle must do that task (as its family says,
engine/families): language models continue text on any split without a task; PermGen bundles
(engine/evaluation/seq2seq.py) take their task's split — stories `--split rocstories_story`,
abstracts `agenda_abstract` or `abstracts` (the 30k set's held-out part), paraphrases `parasci` or
`turkcorpus` — with K candidates per source; language models
paraphrase by rewording (engine/evaluation/rewording.py) on the paraphrase splits:

    variorum eval --bundles runs/pg/permgen/bundle runs/pg/no_permute/bundle --split rocstories_story \
        --candidates 3 --max-sources 100 --decoders topp=0.9 topk=40
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from tqdm import tqdm

from engine.bundles.bundle import Bundle, BundleError, bundle_kind, load_bundle, read_bundle_config
from engine.bundles.choice import bundle_tasks
from engine.bundles.words import known_training_words
from engine.cli_errors import check_output_dir, reports_user_errors
from engine.controls import floors_paraphrases
from engine.data.corpus import file_sha256
from engine.evaluation.decoders import SPEC_HELP, check_decoders, parse_decoder
from engine.evaluation.figures import write_plots
from engine.evaluation.protocols import (
    ProtocolConfig,
    evaluate_bundle,
    human_metrics,
    windows_for,
    work_units,
)
from engine.evaluation.report import display_name, write_reports
from engine.evaluation.rewording import run_rewording
from engine.evaluation.seq2seq import run_seq2seq
from engine.evaluation.splits import (
    DEFAULT_FRACTION,
    SPLIT_FILES,
    SPLIT_TASKS,
    EvalSplit,
    load_split,
    split_from_file,
)
from engine.loaded_model import check_drafts


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="variorum eval", description=__doc__.splitlines()[0])
    p.add_argument("--bundles", type=Path, nargs="+", required=True, help="bundle directories, side by side")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--split", choices=sorted(SPLIT_FILES), help="a fixed evaluation split of ../shared/data")
    where.add_argument("--split-file", type=Path, help="any corpus file our readers know (all its documents)")
    p.add_argument("--data-root", type=Path, help="default: $VARIORUM_DATA or ../shared/data")
    p.add_argument("--split-fraction", type=float, default=DEFAULT_FRACTION)
    p.add_argument("--max-documents", type=int)
    p.add_argument("--out", type=Path, help="report directory (default: runs/eval/<split>)")
    p.add_argument("--device", default="cpu", help="cpu, cuda or auto")
    d = ProtocolConfig()
    p.add_argument("--prefix-len", type=int, default=d.prefix_len)
    p.add_argument("--continuation-len", type=int, default=d.continuation_len)
    p.add_argument("--max-windows", type=int, default=d.max_windows, help="0 = every window of the split")
    p.add_argument("--decoders", nargs="+", default=list(d.decoders),
                   help=f"each: {SPEC_HELP}")
    p.add_argument("--nmst-decoders", nargs="+", default=list(d.nmst_decoders))
    p.add_argument("--nmst-prefix-len", type=int, default=d.nmst_prefix_len)
    p.add_argument("--nmst-max-length", type=int, default=d.nmst_max_length, help="decoding cap L_max")
    p.add_argument("--nmst-windows", type=int, default=d.nmst_windows)
    p.add_argument("--nmst-lengths", type=int, nargs="+", default=list(d.nmst_lengths), help="L values for r_nt(L)")
    p.add_argument("--self-bleu-cap", type=int, help="hypotheses for Self-BLEU (default: all)")
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--batch-size", type=int, default=d.batch_size, help="prefixes decoded together (1-64); "
                   "the same tokens whatever the size")
    p.add_argument("--train-files", type=Path, nargs="+",
                   help="training text for the invented-word rate (default: the files each bundle records)")
    p.add_argument("--no-invented-words", action="store_true",
                   help="skip the invented-word rate (needs the bundles' training files)")
    s2s = p.add_argument_group("PermGen bundles (splits rocstories_story, agenda_abstract, abstracts, parasci, "
                               "turkcorpus)")
    s2s.add_argument("--candidates", type=int, default=d.candidates, help="K candidates per source (1-8)")
    s2s.add_argument("--max-sources", type=int, default=d.max_sources, help="sources decoded, 0 = all")
    s2s.add_argument("--beam-width", type=int, default=d.beam_width, help="> 1: beam search inside sentences")
    return p


def protocol_from_args(args: argparse.Namespace) -> ProtocolConfig:
    return ProtocolConfig(
        prefix_len=args.prefix_len, continuation_len=args.continuation_len,
        max_windows=args.max_windows or None, decoders=tuple(args.decoders),
        nmst_decoders=tuple(args.nmst_decoders), nmst_prefix_len=args.nmst_prefix_len,
        nmst_max_length=args.nmst_max_length, nmst_windows=args.nmst_windows,
        nmst_lengths=tuple(args.nmst_lengths), self_bleu_cap=args.self_bleu_cap,
        seed=args.seed, batch_size=args.batch_size, candidates=args.candidates,
        max_sources=args.max_sources or None, beam_width=args.beam_width,
    )


def held_out(bundle: Bundle, split: EvalSplit) -> bool | None:
    """True if the bundle's training split held every split document out (None: unknown)."""
    fraction = bundle.provenance.get("train", {}).get("valid_fraction")
    return None if fraction is None else float(fraction) >= split.fraction


def bundle_entry(bundle: Bundle, split: EvalSplit, result: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": display_name(bundle.path), "path": str(bundle.path), "head": bundle.model.config.head,
        "sha256": file_sha256(bundle.path / "model.safetensors"),
        "config_sha256": file_sha256(bundle.path / "config.json"),
        "held_out": held_out(bundle, split), "result": result,
        "groups_from": "training text" if bundle.tokenizer.counts.any() else "evaluated text",
    }


def run_lm(args: argparse.Namespace, config: ProtocolConfig, split: EvalSplit) -> tuple[list[Any], dict[str, Any]]:
    """The language-model protocols (continuation, AGG, NMST) for every bundle → (entries, human rows)."""
    bundles = [load_bundle(path, args.device) for path in args.bundles]
    for bundle in bundles:  # a control the head cannot honour fails before any decoding
        check_decoders(bundle.model.head.capabilities(), config.decoders + config.nmst_decoders)
    total = sum(work_units(config, len(windows_for(b, split, config))) for b in bundles)
    entries = []
    with tqdm(total=total, desc="eval", unit="prefix", file=sys.stderr) as bar:
        for bundle in bundles:
            bar.set_postfix_str(display_name(bundle.path))
            words = None if args.no_invented_words else known_training_words(bundle.path, args.train_files)
            result = evaluate_bundle(bundle, split, config, bar.update, words)
            entries.append(bundle_entry(bundle, split, result.to_dict()))
    return entries, human_metrics(bundles[0], split, config)


def check_drafts_specs(task: str, config: ProtocolConfig, paraphrase_drafts: bool = False) -> None:
    """Refuse, before any decoding, a decoder with drafts where nothing is chosen among them (beam search; a
    paraphrase unless every bundle's meaning floor chooses among drafts: `paraphrase_drafts`)."""
    for spec in config.decoders + config.nmst_decoders:
        try:
            check_drafts(task, config.beam_width, parse_decoder(spec, 1).drafts, paraphrase_drafts)
        except ValueError as error:
            raise ValueError(f"decoder {spec!r}: {error}") from None


def check_bundles(paths: list[Path], split: EvalSplit) -> None:
    """A `ValueError` unless the bundles are of one family and every one does the split's task; a bundle
    whose config.json cannot be read is left to its loading, which says why (after `--out` is checked)."""
    configs = {path: config for path in paths if (config := _readable_config(path)) is not None}
    kinds = list(dict.fromkeys(config["kind"] for config in configs.values()))
    if len(kinds) > 1:
        raise ValueError(f"bundles of different families ({', '.join(kinds)}) are evaluated on different splits; "
                         "evaluate them apart")
    for path, config in configs.items():
        if split.task not in (tasks := bundle_tasks(config)):
            raise ValueError(f"bundle {path} writes {' / '.join(map(repr, tasks))}; split {split.name!r} evaluates "
                             f"task {split.task!r} (the task splits: {SPLIT_TASKS}; any other split: 'continue')")


def permgen_task_form(path: Path) -> tuple[str, str]:
    """A PermGen bundle's task and text form from its config.json; ("", "") for any other bundle."""
    permgen = (_readable_config(Path(path)) or {}).get("permgen", {})
    return str(permgen.get("task", "")), str(permgen.get("text_form", ""))


def _readable_config(path: Path) -> dict[str, Any] | None:
    try:
        return read_bundle_config(Path(path))
    except BundleError:
        return None


def run(args: argparse.Namespace, argv: list[str]) -> Path:
    config = protocol_from_args(args)
    if args.split:
        split = load_split(args.split, args.data_root, args.split_fraction, args.max_documents)
    else:
        split = split_from_file(args.split_file, 1.0, args.max_documents)
    check_bundles(args.bundles, split)
    check_drafts_specs(split.task, config, all(floors_paraphrases(*permgen_task_form(path)) for path in args.bundles))
    out = args.out or Path("runs") / "eval" / split.name
    check_output_dir("--out", out)  # before the decoding, which can take hours
    protocol = run_lm if split.task == "continue" else run_seq2seq
    if split.task == "paraphrase" and all(bundle_kind(Path(path)) == "lm" for path in args.bundles):
        protocol = run_rewording  # a language model paraphrases by rewording
    entries, human = protocol(args, config, split)
    report: dict[str, Any] = {
        "command": "variorum eval " + shlex.join(argv),
        "created": time.strftime("%Y-%m-%d %H:%M:%S %z"),
        "protocol": split.task,
        "split": {"name": split.name, "sha256": split.sha256, "fraction": split.fraction,
                  "documents": len(split.documents or split.examples or split.pairs), "files": split.files},
        "settings": config.to_dict(),
        "bundles": entries,
        "human": human,
        "plots": [],
    }
    report["plots"] = write_plots(report, out)
    write_reports(report, out)
    return out


@reports_user_errors("eval")
def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(argv)
    out = run(args, argv)
    print(f"report written to {out / 'report.md'} and {out / 'report.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
