"""Generation speed: our engine vs Hugging Face `generate()` on the same weights and settings.

    python -m engine.benchmarks.generation [--bundle DIR] [--device cpu|cuda] [--shapes 1x100 5x100 8x200]
    python -m engine.benchmarks.generation --runtime onnx   # torch / ONNX Runtime / HF side by side
    python -m engine.benchmarks.generation --device cuda    # eager torch / recorded bf16 step / HF

Both decode N variants of one prompt as one batch with a KV cache, sampling with the same
temperature / top-p. The HF model is a `GPT2LMHeadModel` holding a copy of the bundle's
backbone weights with the output layer tied to them, so both compute the same distribution.
For each shape (variants × new tokens) runs alternate between the two (after one warm-up each)
and the medians and the ours / HF ratio are printed. Throughput counts the tokens actually
generated (a variant that emits eos stops counting). On the CPU our decoder also stops computing
a variant that ended (its row leaves the batch); `generate()` keeps computing such rows as padding.
On a GPU the torch runtime is the bf16 step replayed from a CUDA graph
(engine/decoding/graphed_step.py), timed beside eager float32 torch.

On the CPU our decoder is also timed with real words only (engine/decoding/real_words.py) in the
same alternating rounds ("words" columns; its cost is 1 − words/ours). As in the app, the speller
and its mask cache live as long as the loaded model, so the warm-up round fills the cache of the
partial words it meets, and each later round (a new seed) still meets new ones. It is timed once more
with no doubled words on top (engine/decoding/doubled_words.py), as a writer starts ("writer" columns;
the ban's cost is 1 − writer/words).

`--busy N` runs the CPU table twice: on the machine as it is ("quiet"), then with N processes that
burn a core each beside it ("busy"), as a writer's laptop is when other programs run. Our decoder
picks its torch thread count by measuring (engine/decoding/cpu_threads.py, "threads" column); HF's
`generate()` runs with torch's default, one thread per core. "ours/var" is our tokens/s per variant. Ours
runs the model as the app loads it to generate (block weights kept packed only: engine/packed_linear.py).

    python -m engine.benchmarks.generation --bundle resources/models/continue-f2-nmst --shapes 4x60 --busy 2
"""

from __future__ import annotations

import argparse
import logging
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol, cast

import torch
from torch import nn
from transformers import GPT2LMHeadModel

from engine.backbones.gpt2 import hf_config
from engine.benchmarks.alternating import alternating_medians
from engine.bundles.bundle import Bundle, load_bundle
from engine.decoding import DecodeConfig, generate_variants
from engine.decoding.backbone_runner import BackboneRunner
from engine.decoding.cpu_threads import CHOICE
from engine.decoding.real_words import WordSpeller
from engine.devices import DEVICE_CHOICES, resolve_device
from engine.front_door import RESOURCES_MODELS
from engine.lm.loaded import lm_vocabulary
from engine.onnx.session import exported
from engine.packed_linear import HalfWeight, keep_packed_weights_only
from engine.word_sources import read_bundle_words

PROMPT = "Tom wanted to learn to play the guitar."


class _Generates(Protocol):
    """The one call this benchmark makes on the HF twin. transformers annotates `generate`'s `self` as
    its own protocol, which GPT2LMHeadModel meets in some releases' annotations and not in others
    (so an ignore on the call goes unused in some): calling through this type holds for them all."""

    def generate(self, inputs: torch.Tensor, **kwargs: Any) -> torch.Tensor: ...


def hf_twin(bundle: Bundle) -> GPT2LMHeadModel:
    """A transformers LM with the bundle's backbone weights and an output layer tied to its embedding. For a
    softmax-head bundle that is the same distribution; for another head (a Llama base under an F² / NMST head)
    it is the base's own softmax, so the ratio prices our head and decoder against transformers' plain one."""
    if bundle.model.config.backbone == "llama":
        from engine.checkpoints.llama_import import hf_llama_twin

        if bundle.model.head.name != "softmax":
            print(f"note: transformers runs the base's own softmax; ours runs the bundle's {bundle.model.head.name} "
                  "head on the same backbone weights")
        return cast(GPT2LMHeadModel, hf_llama_twin(bundle.model))
    if bundle.model.head.name != "softmax":
        print(f"note: transformers runs a softmax tied to the embedding; ours runs the bundle's "
              f"{bundle.model.head.name} head on the same backbone weights")
    twin = GPT2LMHeadModel(hf_config(bundle.model.config))
    twin.transformer.load_state_dict(cast(nn.Module, bundle.model.backbone.transformer).state_dict())
    twin.tie_weights()
    twin.train(False)
    return twin


def _clock(device: torch.device) -> float:
    if device.type == "cuda":  # kernels run asynchronously: wait for them before reading the clock
        torch.cuda.synchronize(device)
    return time.perf_counter()


def time_ours(
    bundle: Bundle, n: int, new_tokens: int, seed: int, runner: BackboneRunner[Any] | None = None,
    words: WordSpeller | None = None, no_doubled_words: bool = False,
) -> tuple[float, int]:
    settings = DecodeConfig(max_new_tokens=new_tokens, top_p=0.9, seed=seed, real_words=words is not None,
                            no_doubled_words=no_doubled_words)
    device = next(bundle.model.parameters()).device
    start = _clock(device)
    variants = generate_variants(bundle.model, bundle.tokenizer, PROMPT, n, settings, runner=runner, words=words)
    return _clock(device) - start, sum(len(v.token_ids) for v in variants)


def time_hf(bundle: Bundle, twin: GPT2LMHeadModel, n: int, new_tokens: int, seed: int) -> tuple[float, int]:
    tokenizer = bundle.tokenizer
    device = twin.device
    ids = torch.tensor([[tokenizer.eos_id, *tokenizer.encode(PROMPT)]] * n, device=device)  # [N, P], as ours
    torch.manual_seed(seed)
    start = _clock(device)
    with torch.inference_mode():
        out = cast(_Generates, twin).generate(
            ids, attention_mask=torch.ones_like(ids), do_sample=True, top_p=0.9, top_k=0, max_new_tokens=new_tokens,
            eos_token_id=tokenizer.eos_id, pad_token_id=tokenizer.pad_id,
        )
    elapsed = _clock(device) - start
    new = out[:, ids.shape[1] :]  # [N, ≤new_tokens]; pad after a variant's eos
    return elapsed, int((new != tokenizer.pad_id).sum())


def compare(
    bundle: Bundle, twin: GPT2LMHeadModel, words: WordSpeller, n: int, new_tokens: int, rounds: int
) -> tuple[float, float, float, float]:
    """Median tokens/s (ours, with real words only, with no doubled words too, HF) over `rounds` alternating runs
    after one warm-up each."""
    ours, spelled, writer, theirs = alternating_medians([
        lambda seed: time_ours(bundle, n, new_tokens, seed),
        lambda seed: time_ours(bundle, n, new_tokens, seed, words=words),
        lambda seed: time_ours(bundle, n, new_tokens, seed, words=words, no_doubled_words=True),
        lambda seed: time_hf(bundle, twin, n, new_tokens, seed),
    ], rounds)
    return ours, spelled, writer, theirs


def real_words(bundle: Bundle, device: torch.device) -> WordSpeller:
    """The speller the app would use for PROMPT (the bundle's words.txt if it has one, the list, the prompt)."""
    vocabulary = lm_vocabulary(read_bundle_words(bundle.path), bundle.tokenizer, device)
    training = "with" if vocabulary.has_training_words else "without (no words.txt)"
    print(f"real words: {len(vocabulary.base)}, {training} the bundle's training words")
    return vocabulary.speller([PROMPT])


def compare_runtimes(
    bundle: Bundle, twin: GPT2LMHeadModel, runner: BackboneRunner[Any], n: int, new_tokens: int, rounds: int
) -> tuple[float, float, float]:
    """Median tokens/s (eager torch, `runner`, HF) over `rounds` rounds alternating the three, after a warm-up."""
    torch_rate, onnx_rate, hf_rate = alternating_medians([
        lambda seed: time_ours(bundle, n, new_tokens, seed),
        lambda seed: time_ours(bundle, n, new_tokens, seed, runner),
        lambda seed: time_hf(bundle, twin, n, new_tokens, seed),
    ], rounds)
    return torch_rate, onnx_rate, hf_rate


def onnx_runner(bundle: Bundle, device: torch.device, scratch: Path, runtime: str) -> BackboneRunner[Any]:
    """The bundle's ONNX runner (`runtime` onnx / onnx-int8); a bundle without an export is exported to a
    copy in `scratch` first (int8 needs `variorum export-onnx --int8 FILES` beforehand)."""
    from engine.lm.loaded import choose_lm_runtime
    from engine.onnx.export import export_bundle
    from engine.onnx.session import exported

    path = bundle.path
    if not exported(path):
        path = scratch / bundle.path.name
        shutil.copytree(bundle.path, path)
        export_bundle(path)
        print(f"({bundle.path} has no ONNX export: exported a copy to {path})")
    config = bundle.model.config
    choice = choose_lm_runtime(path, config.block_size, config.n_embd, runtime, device)
    if choice.runner is None:
        raise SystemExit(choice.note)
    print(f"runtime: {choice.name}" + (f" ({choice.note})" if choice.note else ""))
    return choice.runner


def graphed_runner(bundle: Bundle) -> BackboneRunner[Any]:
    """The recorded bf16 step the torch runtime uses on a GPU (the API's choice, check included)."""
    from engine.decoding.graphed_step import graphed_runtime

    runner, note = graphed_runtime(bundle.model.backbone)
    if runner is None:
        raise SystemExit(note)
    print(f"runtime: {runner.name}")
    return runner


def print_runtimes(bundle: Bundle, twin: GPT2LMHeadModel, runner: BackboneRunner[Any], label: str,
                   args: argparse.Namespace) -> None:
    """Eager torch / `runner` (`label`) / HF tokens/s side by side, with runner / HF and runner / torch."""
    print(f"{'variants × tokens':>18} {'torch tok/s':>12} {f'{label} tok/s':>12} {'HF tok/s':>9} "
          f"{f'{label}/HF':>9} {f'{label}/torch':>12}")
    for n, new_tokens in args.shapes:
        ours, other, theirs = compare_runtimes(bundle, twin, runner, n, new_tokens, args.rounds)
        print(f"{f'{n} × {new_tokens}':>18} {ours:12.1f} {other:12.1f} {theirs:9.1f} {other / theirs:9.2f} "
              f"{other / ours:12.2f}")


def block_weights_kind(bundle: Bundle) -> str:
    """What a decoding step's block products read, in words."""
    weights = [getattr(module, "weight", None) for module in bundle.model.modules()]
    if any(isinstance(weight, HalfWeight) for weight in weights):
        return "float16 weights, FBGEMM"
    if any(isinstance(weight, torch.Tensor) and weight.is_mkldnn for weight in weights):
        return "float32 weights, oneDNN's packed layout"
    return "float32 weights"


def parse_shape(text: str) -> tuple[int, int]:
    """'5x100' → (5 variants, 100 new tokens)."""
    variants, _, tokens = text.partition("x")
    if not (variants.isdigit() and tokens.isdigit()):
        raise argparse.ArgumentTypeError(f"a shape is VARIANTSxTOKENS, e.g. 5x100; got {text!r}")
    return int(variants), int(tokens)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", type=Path, default=RESOURCES_MODELS / "roc-stories-tiny")
    parser.add_argument("--device", default="cpu", choices=list(DEVICE_CHOICES))
    parser.add_argument("--shapes", nargs="+", type=parse_shape, default=[(1, 100), (5, 100), (8, 200)],
                        metavar="NxT", help="variants x new tokens (default: 1x100 5x100 8x200)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runtime", default="torch", choices=["torch", "onnx", "onnx-int8"],
                        help="onnx / onnx-int8: also time the ONNX Runtime decoder step (engine/onnx), side by side")
    parser.add_argument("--busy", type=int, default=0, metavar="N",
                        help="CPU: time quiet, then again beside N CPU-burning processes")
    args = parser.parse_args(argv)
    if args.busy < 0:
        parser.error("--busy takes a number of processes >= 0")
    # transformers advises padding masks; every row here has the same length
    logging.getLogger("transformers").setLevel(logging.ERROR)
    device = resolve_device(args.device)
    bundle = load_bundle(args.bundle, device)
    twin = hf_twin(bundle)
    nn.Module.to(twin, device)  # in place; transformers' own `to` stub rejects a torch.device
    print(f"bundle {args.bundle} · {device} · top-p 0.9 · {torch.get_num_threads()} threads · "
          f"median of {args.rounds} alternating rounds")
    if args.runtime != "torch":
        with tempfile.TemporaryDirectory() as scratch:
            print_runtimes(bundle, twin, onnx_runner(bundle, device, Path(scratch), args.runtime), "ONNX", args)
        return
    if device.type == "cuda":
        print_runtimes(bundle, twin, graphed_runner(bundle), "graph", args)
        return
    # ours as the app and the CLI load it to generate (after the twin's copy): float16 blocks unless exported
    keep_packed_weights_only(bundle.model, half=not exported(bundle.path))
    print(f"our block products: {block_weights_kind(bundle)}")
    words = real_words(bundle, device)
    if not args.busy:
        print_cpu_table(bundle, twin, words, args)
        return
    print("quiet:")
    print_cpu_table(bundle, twin, words, args)
    with busy_cpu(args.busy):
        print(f"busy ({args.busy} CPU-burning processes beside it):")
        print_cpu_table(bundle, twin, words, args)


def print_cpu_table(bundle: Bundle, twin: GPT2LMHeadModel, words: WordSpeller, args: argparse.Namespace) -> None:
    """Ours (plain, real words, writer's defaults) beside HF for each shape, with our measured thread count."""
    print(f"{'variants × tokens':>18} {'threads':>7} {'ours tok/s':>11} {'ours/var':>9} {'words tok/s':>12} "
          f"{'writer tok/s':>13} {'HF tok/s':>9} {'ours/HF':>8} {'words/ours':>11} {'writer/words':>13}")
    for n, new_tokens in args.shapes:
        ours, spelled, writer, theirs = compare(bundle, twin, words, n, new_tokens, args.rounds)
        threads = CHOICE.threads(bundle.model, n)
        print(f"{f'{n} × {new_tokens}':>18} {threads:7d} {ours:11.1f} {ours / n:9.1f} {spelled:12.1f} "
              f"{writer:13.1f} {theirs:9.1f} {ours / theirs:8.2f} {spelled / ours:11.2f} {writer / spelled:13.2f}")


BURN = "while True: pass"


@contextmanager
def busy_cpu(processes: int) -> Iterator[list[subprocess.Popen[bytes]]]:
    """`processes` child processes that each keep a core busy for as long as the block runs; killed after it."""
    burners = [subprocess.Popen([sys.executable, "-c", BURN]) for _ in range(processes)]
    try:
        time.sleep(1.0)  # let the load average and the scheduler see them before anything is timed
        yield burners
    finally:
        for burner in burners:
            burner.kill()
        for burner in burners:
            burner.wait()


if __name__ == "__main__":
    main()
