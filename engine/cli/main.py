"""The `variorum` command line: generate, bundles, train, perplexity.

`variorum generate` streams all N variants live in the terminal (one panel each, updated as
tokens arrive); when stdout is not a terminal it prints each variant once it is finished.
Ctrl+C stops generation at the next step and still prints what was produced.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from engine.cli_args import add_decode_flags
from engine.controls import DEFAULT_VARIANTS, MAX_VARIANTS, TASKS
from engine.onnx import RUNTIMES

if TYPE_CHECKING:  # torch, transformers and rich load only when a command runs, so --help is instant
    from rich.console import Console, Group

    from engine.decoding import DecodeStream, Variant

# Commands that parse their own flags: name → (module whose main(argv) runs it, help). Their modules
# are imported only when the command is chosen.
FORWARDED: dict[str, tuple[str, str]] = {
    "train": ("engine.lm.train", "train a model (see `variorum train --help`)"),
    "perplexity": ("engine.perplexity", "validation perplexity of a bundle"),
    "train-permgen": ("engine.permgen.train", "train a PermGen story/abstract/paraphrase model (see --help)"),
    "diagnose": ("engine.diagnostics.cli", "embedding I(W), group cosine, PPL/Uniq per frequency group"),
    "build-recipe": ("engine.cli.recipes", "build a bundle from recipes/<name>.json and measure it"),
    "eval": ("engine.evaluation.run", "evaluate bundles on a split: the papers' tables and plots"),
    "export-onnx": ("engine.onnx.export", "write a bundle's decoder (and encoder) as ONNX for --runtime onnx"),
    "bundle-words": ("engine.bundles.words", "write a bundle's training words (words.txt) for real words only"),
    "import": ("engine.cli.import_command", "a pretrained GPT-2 checkpoint on this machine as a bundle (offline)"),
    "get-base": ("engine.cli.get_base", "fetch the pretrained base model (SmolLM2-135M-Instruct) once, as a bundle"),
    "fit-scorer": ("engine.coherence.fit_cli", "fit the coherence scorer on Story Cloze val, measure it on test"),
}


def _generate_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("generate", help="generate N variants continuing a prompt")
    p.add_argument("--bundle", type=Path, help="bundle directory (default: the first bundled model)")
    p.add_argument("--prompt", default="", help="text to continue (default: start a new text)")
    p.add_argument("-n", "--num-variants", type=int, default=DEFAULT_VARIANTS,
                   help=f"number of variants, 1-{MAX_VARIANTS}")
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    p.add_argument("--runtime", default="auto", choices=list(RUNTIMES),
                   help="what runs the decoder: auto = ONNX Runtime when the bundle has an export (export-onnx); "
                        "torch on a GPU runs a language model's step in bf16 from a recorded CUDA graph")
    # PermGen paragraph tasks: a bundle from `variorum train-permgen`
    p.add_argument("--task", choices=list(TASKS),
                   help="default: what --bundle does (its first task), else continue; story / abstract / "
                   "paraphrase need a PermGen bundle (paraphrase: the passage is --prompt)")
    p.add_argument("--title", default="", help="story/abstract: the title")
    p.add_argument("--keywords", default="", help="story/abstract: comma-separated (default: from the title)")
    p.add_argument("--num-sentences", type=int, help="story/abstract: 1-10 (default: the model decides)")
    p.add_argument("--sentence-order", help="story/abstract: first sentence 'k' or a full order '3,1,2' "
                   "(default: the model's choice, each variant starting at a different sentence)")
    add_decode_flags(p)  # every decoding setting, from its declaration (engine/decode_fields)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="variorum", description="Variorum: many different drafts of a text.")
    sub = parser.add_subparsers(dest="command", required=True)
    _generate_parser(sub)
    sub.add_parser("bundles", help="list available model bundles")
    for name, (_, help_text) in FORWARDED.items():
        sub.add_parser(name, help=help_text, add_help=False)
    return parser


def _render(variants: list[Variant], texts: list[str], finished: set[int]) -> Group:
    from rich.console import Group
    from rich.panel import Panel
    from rich.text import Text

    panels = []
    for i, text in enumerate(texts):
        if i >= len(variants):  # drafts are being written and chosen: this variant is not known yet
            panels.append(Panel(Text("…"), title=Text(f"variant {i + 1} · choosing among drafts…"), title_align="left"))
            continue
        state = f"done ({variants[i].finish_reason})" if i in finished else "writing…"
        title = f"variant {i + 1} · seed {variants[i].seed} · {state}"
        panels.append(Panel(Text(text or "…"), title=Text(title), title_align="left"))
    return Group(*panels)


def _print_final(console: Console, variants: list[Variant]) -> None:
    for v in variants:
        console.print(
            f"--- variant {v.index + 1} · seed {v.seed} · log-prob {v.log_prob:.1f} · {v.finish_reason} ---",
            markup=False,
            highlight=False,
        )
        console.print(v.text, markup=False, highlight=False)
        if v.prompt_cut:
            console.print("    (the prompt was longer than the model's window: only its end was read)",
                          markup=False, highlight=False)
        if getattr(v, "order", None):  # PermGen: generation order and Eq. 8 rank
            console.print(f"    written in order {v.order}, rank {getattr(v, 'rank', 0)} "  # type: ignore[attr-defined]
                          f"(mean log-prob {getattr(v, 'score', 0.0):.3f})", markup=False, highlight=False)
        if "self_bleu" in v.settings:  # paraphrase: how far each variant is from the source
            per_sentence = ", ".join(f"{b:.2f}/{w:.2f}" for b, w in zip(v.settings["sentence_self_bleu"],
                                                                         v.settings["sentence_self_wer"], strict=True))
            console.print(f"    Self-BLEU {v.settings['self_bleu']:.3f}, Self-WER {v.settings['self_wer']:.3f} vs the "
                          f"source (per sentence BLEU/WER: {per_sentence})", markup=False, highlight=False)


def run_generate(args: argparse.Namespace, console: Console) -> int:
    from rich.live import Live

    from engine.bundles.bundle import BundleError
    from engine.bundles.choice import missing_model_message
    from engine.cli.generate_flags import decode_from_flags, fit_to_model
    from engine.front_door import Engine, GenerationRequest, describe_bundle
    from engine.word_sources import missing_words_note

    engine = Engine()
    path = args.bundle
    if args.task is None:  # a story bundle given without --task writes stories rather than refusing to continue
        tasks = describe_bundle(path).tasks if path is not None and path.is_dir() else ()
        args.task = tasks[0] if tasks else "continue"
    if path is None:
        info = engine.default_bundle(args.task)
        if info is None:
            raise BundleError(f"no bundle for {args.task}; pass --bundle DIR. {missing_model_message(args.task)}")
        path = info.path
    decode = decode_from_flags(args)  # bad settings and requests fail before the model loads
    request = GenerationRequest(prompt=args.prompt, n=args.num_variants, decode=decode, beam_width=args.beam,
                                **_paragraph_fields(args))  # type: ignore[arg-type]
    model = engine.load(path, device=args.device, runtime=args.runtime)
    if model.runtime_note:  # a faster runtime fell back: say why, once
        print(f"warning: {model.runtime_note}", file=sys.stderr)
    request = dataclasses.replace(request, decode=fit_to_model(args, decode, model.capabilities))
    if request.decode.real_words and not model.real_words().has_training_words:
        print(f"note: {missing_words_note(path)}", file=sys.stderr)
    stop = threading.Event()
    stream = model.stream(request, should_stop=stop.is_set)
    if request.decode.drafts > 1:
        print(f"note: {model.selection_note}; {request.n * request.decode.drafts} drafts are written first",
              file=sys.stderr)
    texts = [""] * request.n
    finished: set[int] = set()
    if console.is_terminal:
        with Live(_render(stream.variants, texts, finished), console=console, refresh_per_second=12,
                  transient=True) as live:  # the live panels give way to the final listing: each variant once
            _consume(stream, texts, finished, stop, lambda: live.update(_render(stream.variants, texts, finished)))
    else:
        _consume(stream, texts, finished, stop, lambda: None)
    _print_final(console, stream.variants)
    return 0


def _consume(
    stream: DecodeStream, texts: list[str], finished: set[int], stop: threading.Event, redraw: Callable[[], None]
) -> None:
    """Drain the stream, keeping `texts` current; Ctrl+C asks the stream to stop."""
    try:
        for event in stream:
            if event.draft:  # not shown: the chosen drafts stream again as the variants
                continue
            texts[event.variant] += event.text_delta
            if stream.variants[event.variant].finish_reason:
                finished.add(event.variant)
            redraw()
    except KeyboardInterrupt:
        stop.set()
        for _ in stream:
            pass
    finished.update(range(len(texts)))
    redraw()


def _paragraph_fields(args: argparse.Namespace) -> dict[str, object]:
    """PermGen request fields from the generate flags; {} for the continue task."""
    if args.task == "continue":
        return {}
    order = _sentence_order(args.sentence_order) if args.sentence_order else None
    keywords = [k.strip() for k in args.keywords.split(",") if k.strip()]
    return {"task": args.task, "title": args.title, "keywords": keywords, "num_sentences": args.num_sentences,
            "sentence_order": order}


def _sentence_order(text: str) -> list[int]:
    """--sentence-order "k" or "3,1,2" as sentence numbers; ValueError naming the flag for anything else."""
    parts = text.replace(",", " ").split()
    if not parts or not all(part.isdecimal() for part in parts):
        raise ValueError(f"--sentence-order takes a first sentence k or a full order such as 3,1,2; got {text!r}")
    return [int(part) for part in parts]


def run_bundles(args: argparse.Namespace, console: Console) -> int:
    from engine import front_door

    bundles = front_door.Engine().list_bundles()
    for info in bundles:
        status = f"UNUSABLE: {info.error}" if info.error else info.summary[:100]
        console.print(f"{info.name}  [{info.head}]  {info.path}\n    {status}", markup=False, highlight=False)
    console.print(f"{'no bundles found; ' if not bundles else ''}your models folder: {front_door.user_models_dir()} "
                  "(copy a bundle folder there to use it)", markup=False, highlight=False)
    _print_importable(console)
    return 0 if bundles else 1


def _print_importable(console: Console) -> None:
    """Pretrained checkpoints in the local Hugging Face caches that `variorum import` makes into bundles."""
    from engine.bundles.imported import importable_checkpoints

    found = importable_checkpoints()
    if found:
        console.print("pretrained checkpoints on this machine (`variorum import NAME` makes a bundle of one):",
                      markup=False, highlight=False)
    for info in found:
        console.print(f"  {info.summary}", markup=False, highlight=False)


LOCAL: dict[str, Callable[[argparse.Namespace, Console], int]] = {"generate": run_generate, "bundles": run_bundles}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in FORWARDED:
        module = importlib.import_module(FORWARDED[argv[0]][0])
        status: int = module.main(argv[1:])
        return status
    args = build_parser().parse_args(argv)
    from rich.console import Console

    from engine.cli_errors import USER_ERRORS, report_user_error

    # Cards, file names and generated text are printed as written: no emoji codes (":x:"), markup or highlighting.
    console = Console(emoji=False, markup=False, highlight=False)
    try:
        return LOCAL[args.command](args, console)
    except USER_ERRORS as error:
        return report_user_error(args.command, error)

