"""Embedding diagnostics: I(W) extremes, groups, cosine by hand, per-group PPL/Uniq, the CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from engine.bundles.bundle import load_bundle
from engine.cli import main as cli_main
from engine.diagnostics import (
    agg_group_ids,
    group_cosine,
    group_prediction_stats,
    isotropy,
    normalized_singular_values,
)
from engine.model import LanguageModel
from engine.perplexity import block_perplexity
from tests.conftest import STORIES


def test_isotropy_is_one_for_orthogonal_rows() -> None:
    assert isotropy(torch.eye(8)) == pytest.approx(1.0)
    assert isotropy(3 * torch.cat((torch.eye(6), -torch.eye(6)))) == pytest.approx(1.0)


def test_isotropy_is_near_zero_for_a_collapsed_embedding() -> None:
    torch.manual_seed(0)
    direction = torch.nn.functional.normalize(torch.randn(16), dim=0)
    collapsed = 10 * direction + 0.01 * torch.randn(200, 16)  # a narrow cone of norm-10 vectors
    # Z(±direction) ≈ 200·e^{±10}, Z(any orthogonal eigenvector) ≈ 200 → I(W) ≈ e^{-10} either sign
    assert isotropy(collapsed) == pytest.approx(math.exp(-10), rel=0.05)
    assert 0.0 < isotropy(torch.randn(200, 16) * 0.1) <= 1.0


def test_isotropy_survives_huge_norms() -> None:
    assert isotropy(1e4 * torch.eye(4)) == pytest.approx(1.0)


def test_agg_group_ids_by_hand() -> None:
    counts = np.array([5, 0, 9, 9, 1, 7, 3, 2, 0, 4])  # V = 10 → 3 / 5 / 2
    groups = agg_group_ids(counts)
    assert groups["frequent"].tolist() == [2, 3, 5]  # ties by id
    assert groups["medium"].tolist() == [0, 9, 6, 7, 4]
    assert groups["rare"].tolist() == [1, 8]
    with pytest.raises(ValueError, match="token_counts"):
        agg_group_ids(np.zeros(10, dtype=np.int64))


def test_group_cosine_by_hand() -> None:
    weight = torch.tensor([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
    a, b = torch.tensor([0, 1]), torch.tensor([2])
    assert group_cosine(weight, a, b) == pytest.approx(math.sqrt(0.5))  # (cos 45° + cos 45°) / 2
    assert group_cosine(weight, a, a) == pytest.approx(0.0)  # one pair, orthogonal; self-pairs excluded


def test_normalized_singular_values() -> None:
    values = normalized_singular_values(torch.diag(torch.tensor([4.0, 2.0, 1.0])))
    assert values == pytest.approx([1.0, 0.5, 0.25])


def test_group_stats_match_a_direct_computation(tiny_model: LanguageModel) -> None:
    torch.manual_seed(0)
    blocks = torch.randint(0, 320, (5, 9))
    groups = agg_group_ids(np.arange(320)[::-1].copy())  # id 0 most frequent
    stats = group_prediction_stats(tiny_model, blocks, groups, batch_size=2)
    log_probs = tiny_model.next_log_probs(blocks[:, :-1])
    nll = -log_probs.gather(2, blocks[:, 1:, None]).squeeze(-1)
    rare = torch.isin(blocks[:, 1:], groups["rare"])
    assert stats["ppl"]["rare"] == pytest.approx(math.exp(float(nll[rare].mean())), rel=1e-5)
    assert stats["ppl"]["total"] == pytest.approx(block_perplexity(tiny_model, blocks)[1], rel=1e-5)
    predictions = set(log_probs.argmax(-1).flatten().tolist())
    assert stats["uniq"]["total"] == len(predictions)
    assert sum(stats["uniq"][g] for g in groups) == len(predictions)
    assert stats["uniq"]["medium"] == len(predictions & set(groups["medium"].tolist()))


def test_cli_reports_and_plots(tiny_bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    png = tmp_path / "sv.png"
    code = cli_main(["diagnose", "--bundle", str(tiny_bundle), "--files", str(STORIES), "--all", "--png", str(png)])
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert set(report["isotropy"]) == {"total", "frequent", "medium", "rare"}
    assert set(report["ppl"]) == {"total", "frequent", "medium", "rare"}
    assert "frequent-rare" in report["cosine"]
    assert report["isotropy"]["total"] == pytest.approx(isotropy(load_bundle(tiny_bundle).model.head.proj.weight))
    assert png.stat().st_size > 1000
