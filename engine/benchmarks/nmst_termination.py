"""NMST diagnostics for VA / ST / NMST bundles (paper §4–5, Tables 1–4, Fig. 3, Appendix G).

    python -m engine.benchmarks.nmst_termination --bundle VA=runs/nmst_short/va/bundle \\
        --bundle ST=runs/nmst_short/st/bundle --bundle NMST=runs/nmst_short/nmst/bundle \\
        --files ../shared/data/rocstories/diffusion_lm/roc_valid.json --prefix 10 --prompts 100 \\
        --cap 300 --lengths 50 100 300 --out runs/nmst_short/report

Held-out documents are each bundle's own validation split (its `valid_fraction`). Prompts are
their first `prefix` tokens (the paper's 10-token contexts); decoding uses
engine.decoding.nmst_decoders, i.e. the paper's decoders on the marginal distribution (Variorum's
own stream and beam search), with `cap` as the safety net. Writes into --out:

- report.json / report.md: validation perplexity and r_nt(L) = share of continuations with no
  eos among their first L tokens (Eq. 11), per model × decoder — the shape of Table 4;
  continuation-length summaries of greedy decoding vs the held-out references (Appendix G);
- eos_curve.png: p(eos_t) along one held-out text for each model (Fig. 3);
- lengths.png: histograms of greedy continuation lengths and of the reference lengths.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import torch

from engine.bundles.bundle import Bundle, load_bundle
from engine.data.blocks import make_blocks
from engine.decoding.nmst_decoders import decode_prompts, parse_decoder
from engine.evaluation.splits import default_data_root
from engine.metrics.termination import non_termination_ratio
from engine.model import EOS_ID
from engine.perplexity import block_perplexity, held_out_documents

ROC_VALID = "rocstories/diffusion_lm/roc_valid.json"
RUNS = "runs/nmst_short"
TINY_TRAIN = "--max-steps 300 --vocab-size 2048 --n-layer 2 --n-head 4 --n-embd 128 --block-size 64 --no-progress"
HOW_TO_TRAIN = "\n".join([
    "train the three bundles (tiny settings; minutes on a CPU), then compare them:",
    *(f"  variorum train --train-files {default_data_root() / ROC_VALID} --out-dir {RUNS}/{name} "
      f"--termination {name} {eps}{TINY_TRAIN}" for name, eps in (("va", ""), ("st", "--eps 1e-5 "),
                                                                  ("nmst", "--eps 1e-5 "))),
    f"  python -m engine.benchmarks.nmst_termination --bundle VA={RUNS}/va/bundle "
    f"--bundle ST={RUNS}/st/bundle --bundle NMST={RUNS}/nmst/bundle --prompts 20 --cap 100 --lengths 50 100",
])
TABLE4 = ["greedy", "top-2", "top-4", "nucleus-0.2", "nucleus-0.4", "beam-2", "beam-4"]


def length_summary(lengths: list[int | None], cap: int) -> dict[str, float]:
    """Mean / median of |y| (a capped sequence counts as cap) and the share stopped by the cap."""
    values = [n if n is not None else cap for n in lengths]
    return {"mean": statistics.fmean(values), "median": float(statistics.median(values)),
            "capped": sum(n is None for n in lengths) / len(lengths)}


def eos_curve(bundle: Bundle, text: str) -> tuple[list[float], list[str]]:
    """p(eos_t) before each token of `text` and at its end (cut to the block), with the tokens."""
    tokens = bundle.tokenizer.encode(text)[: bundle.model.config.block_size - 1]
    log_probs = bundle.model.next_log_probs(torch.tensor([[EOS_ID, *tokens]]))[0, :, EOS_ID]
    return [float(x) for x in log_probs.exp()], [bundle.tokenizer.token_text(i) for i in tokens]


def evaluate_bundle(name: str, bundle: Bundle, args: argparse.Namespace) -> dict[str, Any]:
    documents = held_out_documents(bundle, args.files)
    tokenizer = bundle.tokenizer
    encoded = [ids for ids in tokenizer.encode_batch(documents) if len(ids) > args.prefix]
    encoded = encoded[: args.prompts]
    prompts = [ids[: args.prefix] for ids in encoded]
    references = [len(ids) - args.prefix + 1 for ids in encoded]  # continuation + eos
    blocks = make_blocks(tokenizer.encode_batch(documents), tokenizer.eos_id, bundle.model.config.block_size)
    _, ppl = block_perplexity(bundle.model, blocks)
    result: dict[str, Any] = {"name": name, "valid_ppl": ppl, "documents": len(documents),
                              "prompts": len(prompts), "r_nt": {}, "lengths": {}}
    for spec in args.decoders:
        outputs = decode_prompts(bundle.model, tokenizer, prompts, parse_decoder(spec), args.cap, seed=args.seed)
        lengths = [o.length for o in outputs]
        result["r_nt"][spec] = {str(n): non_termination_ratio(lengths, n, args.cap) for n in args.lengths}
        result["lengths"][spec] = {"values": lengths, **length_summary(lengths, args.cap)}
    result["reference_lengths"] = {"values": references, **length_summary(list(references), args.cap)}
    result["eos_curve"], result["eos_curve_tokens"] = eos_curve(bundle, documents[args.curve_doc])
    print(f"{name}: ppl {ppl:.2f}, r_nt({args.lengths[-1]}) "
          + ", ".join(f"{s} {result['r_nt'][s][str(args.lengths[-1])]:.2f}" for s in args.decoders), flush=True)
    return result


def markdown(results: list[dict[str, Any]], args: argparse.Namespace) -> str:
    lines = [f"# NMST diagnostics\n\nCommand: `python -m engine.benchmarks.nmst_termination {' '.join(args.argv)}`\n",
             f"Prompts: first {args.prefix} tokens of {results[0]['prompts']} held-out documents; cap {args.cap}.\n"]
    for length in args.lengths:
        lines.append(f"\n## r_nt({length}) and validation perplexity\n")
        lines.append("| model | valid PPL | " + " | ".join(args.decoders) + " |")
        lines.append("|---|---|" + "---|" * len(args.decoders))
        for r in results:
            cells = [f"{r['r_nt'][s][str(length)]:.3f}" for s in args.decoders]
            lines.append(f"| {r['name']} | {r['valid_ppl']:.2f} | " + " | ".join(cells) + " |")
    lines.append("\n## Continuation lengths (tokens incl. eos; capped ones count as the cap)\n")
    lines.append("| model | decoder | mean | median | share capped |")
    lines.append("|---|---|---|---|---|")
    for r in results:
        for spec, s in [*r["lengths"].items(), ("reference", r["reference_lengths"])]:
            lines.append(f"| {r['name']} | {spec} | {s['mean']:.1f} | {s['median']:.0f} | {s['capped']:.3f} |")
    return "\n".join(lines) + "\n"


def plot(results: list[dict[str, Any]], out: Path, cap: int) -> None:
    figure, axis = plt.subplots(figsize=(9, 3.5))
    for r in results:
        axis.plot(range(1, len(r["eos_curve"]) + 1), r["eos_curve"], marker=".", label=r["name"])
    tokens = results[0]["eos_curve_tokens"]
    axis.set_xticks(range(1, len(tokens) + 2), [*tokens, "<eos>"], rotation=90, fontsize=6)
    axis.set_ylabel("p(eos_t)")
    axis.set_yscale("log")
    axis.legend()
    figure.tight_layout()
    figure.savefig(out / "eos_curve.png", dpi=120)
    plt.close(figure)
    figure, axis = plt.subplots(figsize=(6, 4))
    bins = list(range(0, cap + 11, 10))
    axis.hist([min(n, cap) for n in results[0]["reference_lengths"]["values"]], bins=bins, histtype="step",
              label="reference", linewidth=2, color="black")
    for r in results:
        values = [n if n is not None else cap for n in r["lengths"].get("greedy", {}).get("values", [])]
        axis.hist(values, bins=bins, histtype="step", label=f"{r['name']} greedy")
    axis.set_xlabel(f"continuation length (tokens; {cap} = stopped by the cap)")
    axis.set_ylabel("continuations")
    axis.legend()
    figure.tight_layout()
    figure.savefig(out / "lengths.png", dpi=100)
    plt.close(figure)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=HOW_TO_TRAIN,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bundle", action="append", help="NAME=PATH (repeat); see below to train them")
    parser.add_argument("--files", type=Path, nargs="+", default=[default_data_root() / ROC_VALID],
                        help="held-out text (default: %(default)s)")
    parser.add_argument("--decoders", nargs="+", default=TABLE4)
    parser.add_argument("--prefix", type=int, default=10)
    parser.add_argument("--prompts", type=int, default=100)
    parser.add_argument("--cap", type=int, default=300)
    parser.add_argument("--lengths", type=int, nargs="+", default=[50, 100, 300])
    parser.add_argument("--curve-doc", type=int, default=0, help="which held-out document Fig. 3 follows")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("runs/nmst_short/report"), help="default: %(default)s")
    args = parser.parse_args(argv)
    if not args.bundle:
        parser.error("no --bundle given: it compares bundles you train first:\n" + HOW_TO_TRAIN)
    if missing := [str(path) for path in args.files if not path.is_file()]:
        parser.error(f"held-out data not found: {', '.join(missing)} (set VARIORUM_DATA or pass --files)")
    args.argv = sys.argv[1:] if argv is None else argv
    if any(not 1 <= n <= args.cap for n in args.lengths):
        parser.error(f"every --lengths value must be in [1, --cap={args.cap}]")
    torch.manual_seed(args.seed)
    results = []
    for item in args.bundle:
        name, _, path = item.partition("=")
        if not path:
            parser.error(f"--bundle needs NAME=PATH, got {item!r}")
        results.append(evaluate_bundle(name, load_bundle(Path(path)), args))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "report.json").write_text(json.dumps(results, indent=1))
    (args.out / "report.md").write_text(markdown(results, args))
    plot(results, args.out, args.cap)
    print((args.out / "report.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
