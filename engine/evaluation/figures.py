"""PNG plots of an evaluation report (matplotlib, no display).

- frequency_groups.png: share of generated tokens per frequency group, per model × decoder, with
  the human share (bars);
- eos_curves.png: mean p(eos_t) per step of the continuations (log scale);
- non_termination.png: r_nt(L) against L for each model × NMST decoder (log-log as NMST Fig. 2);
- tradeoff.png: quality–diversity trade-off as POSG Fig. 2 — x = MS-Jaccard-3 (closeness to the
  human continuations), y = −Self-BLEU-4, one point per model × decoder.

PermGen reports (protocol story / abstract / paraphrase) get one plot instead, tradeoff.png:
x = top-1 BLEU-4 (paragraphs) or BLEU-4 vs the reference (paraphrases, POSG Fig. 2), y =
−pairwise Self-BLEU-4 among a source's K candidates (paragraphs) or −Self-BLEU-4 vs the source.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from engine.metrics.frequency import GROUP_NAMES


def _save(figure: Any, path: Path) -> None:
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def _runs(report: dict[str, Any], key: str) -> list[tuple[str, Any]]:
    return [(f"{b['name']} · {d}", v) for b in report["bundles"] for d, v in b["result"][key].items()]


def plot_group_shares(report: dict[str, Any], path: Path) -> None:
    runs = [*_runs(report, "shares"), ("human", report["human"]["shares"])]
    figure, axis = plt.subplots(figsize=(7, 4))
    width = 0.8 / len(runs)
    x = np.arange(len(GROUP_NAMES))
    for i, (label, shares) in enumerate(runs):
        axis.bar(x + i * width, [100 * s for s in shares], width, label=label)
    axis.set_xticks(x + 0.4 - width / 2, GROUP_NAMES)
    axis.set_ylabel("% of tokens")
    axis.legend(fontsize=7)
    _save(figure, path)


def plot_eos_curves(report: dict[str, Any], path: Path) -> None:
    figure, axis = plt.subplots(figsize=(6, 4))
    for label, curve in _runs(report, "eos_curves"):
        axis.plot(range(1, len(curve) + 1), np.maximum(curve, 1e-12), label=label)
    axis.set_yscale("log")
    axis.set_xlabel("generation step t")
    axis.set_ylabel("mean p(eos_t)")
    axis.legend(fontsize=7)
    _save(figure, path)


def plot_non_termination(report: dict[str, Any], path: Path) -> None:
    figure, axis = plt.subplots(figsize=(6, 4))
    for label, values in _runs(report, "nmst"):
        curve = np.asarray(values["curve"])
        axis.plot(np.arange(1, len(curve) + 1), np.maximum(curve, 1e-4), label=label)
    axis.set_xscale("log")
    axis.set_yscale("log")
    axis.set_xlabel("L")
    axis.set_ylabel("r_nt(L)")
    axis.legend(fontsize=7)
    _save(figure, path)


def plot_tradeoff(report: dict[str, Any], path: Path) -> None:
    figure, axis = plt.subplots(figsize=(5, 4))
    for label, metrics in _runs(report, "lm"):
        if metrics.get("self_bleu_4") is None:
            continue
        x, y = 100 * metrics["ms_jaccard_3"], -100 * metrics["self_bleu_4"]
        axis.scatter([x], [y])
        axis.annotate(label, (x, y), fontsize=7)
    axis.set_xlabel("MS-Jaccard-3 (quality) ↑")
    axis.set_ylabel("−Self-BLEU-4 (diversity) ↑")
    _save(figure, path)


PLOTS = {
    "frequency_groups.png": plot_group_shares,
    "eos_curves.png": plot_eos_curves,
    "non_termination.png": plot_non_termination,
    "tradeoff.png": plot_tradeoff,
}


SEQ2SEQ_AXES = {  # protocol → (x key, x label, y key, y label)
    "paraphrase": ("bleu_4", "BLEU-4 vs reference (quality) ↑", "self_bleu_4_source",
                   "−Self-BLEU-4 vs source (diversity) ↑"),
    "paragraph": ("top1_bleu_4", "top-1 BLEU-4 (quality) ↑", "pairwise_self_bleu_4",
                  "−pairwise Self-BLEU-4 (diversity) ↑"),
}


def plot_seq2seq_tradeoff(report: dict[str, Any], path: Path) -> None:
    x_key, x_label, y_key, y_label = SEQ2SEQ_AXES["paraphrase" if report["protocol"] == "paraphrase" else "paragraph"]
    figure, axis = plt.subplots(figsize=(5, 4))
    for label, metrics in _runs(report, "seq2seq"):
        if metrics.get(y_key) is None:
            continue
        x, y = 100 * metrics[x_key], -100 * metrics[y_key]
        axis.scatter([x], [y])
        axis.annotate(label, (x, y), fontsize=7)
    axis.set_xlabel(x_label)
    axis.set_ylabel(y_label)
    _save(figure, path)


def write_plots(report: dict[str, Any], out_dir: Path) -> list[str]:
    out_dir.mkdir(parents=True, exist_ok=True)
    if report.get("protocol", "continue") != "continue":
        plot_seq2seq_tradeoff(report, out_dir / "tradeoff.png")
        return ["tradeoff.png"]
    for name, plot in PLOTS.items():
        plot(report, out_dir / name)
    return list(PLOTS)
