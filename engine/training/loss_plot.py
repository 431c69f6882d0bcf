"""PNG plots written by the training and evaluation entry points (matplotlib, no display)."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

from engine.files.atomic_writes import atomic_file

matplotlib.use("Agg")
import matplotlib.pyplot as plt


def plot_loss_curve(metrics_path: Path, png_path: Path) -> None:
    """Train loss and validation loss per step from a metrics.jsonl log."""
    train: dict[int, float] = {}
    valid: dict[int, float] = {}
    for line in metrics_path.read_text().splitlines():
        record = json.loads(line)
        if "train_loss" in record:
            train[record["step"]] = record["train_loss"]
        if "valid_loss" in record:
            valid[record["step"]] = record["valid_loss"]
    figure, axis = plt.subplots(figsize=(6, 4))
    if train:
        axis.plot(sorted(train), [train[s] for s in sorted(train)], label="train", alpha=0.7)
    if valid:
        axis.plot(sorted(valid), [valid[s] for s in sorted(valid)], "o-", label="validation")
    axis.set_xlabel("optimizer step")
    axis.set_ylabel("loss (nats / token)")
    axis.legend()
    axis.grid(alpha=0.3)
    figure.tight_layout()
    with atomic_file(png_path) as temp:  # a kill mid-save keeps the previous curve
        figure.savefig(temp, dpi=100, format="png")
    plt.close(figure)
