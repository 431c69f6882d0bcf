"""F² head: the factorized distribution against an explicit loop over Eq. 2/4, loss, gradients,
bundles and training through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from engine.bundles.bundle import load_bundle, save_bundle
from engine.cli import main as cli_main
from engine.config import ConfigError
from engine.heads.f2 import FREQ_CLASSES_FILE, F2Head
from engine.heads.frequency_classes import build_frequency_classes
from engine.heads.registry import fit_head, load_fitted_head
from engine.lm.train import main as train_main
from engine.model import LanguageModel
from engine.tokenizer import VariorumTokenizer
from tests.conftest import STORIES, tiny_config
from tests.engine.heads.f2_support import build_f2_model, f2_head

COUNTS = [9, 1, 5, 2, 4, 3, 0]  # 7 tokens; MefMax over 9,5,4,3,2,1 (+ one zero-count token)


def small_head(dtype: torch.dtype = torch.float32) -> F2Head:
    classes = build_frequency_classes(COUNTS)
    torch.manual_seed(3)
    head = F2Head(len(COUNTS), 4, classes.num_classes).to(dtype)
    head.assign(classes)
    return head


def explicit_log_probs(head: F2Head, hidden: torch.Tensor) -> torch.Tensor:
    """log p(x) = log p1(c(x)) + log p2(x | c(x)) by a loop over tokens (Eq. 2 and 4)."""
    rows = []
    for h in hidden:
        p1 = torch.softmax(head.class_proj.weight @ h, dim=0)  # [K]
        z = head.proj.weight @ h  # [V]
        row = []
        for x in range(head.vocab_size):
            members = head.token_class == head.token_class[x]
            p2 = torch.exp(z[x]) / torch.exp(z[members]).sum()
            row.append(torch.log(p1[head.token_class[x]] * p2))
        rows.append(torch.stack(row))
    return torch.stack(rows)


def test_small_head_classes() -> None:
    head = small_head()
    # sorted counts 9,5,4,3,2,1: ⌊1/p_max⌋ = 2; K = 2 splits after 5 (cum 14 ≥ 12); zero joins the last
    assert head.num_groups == 2
    assert head.token_class.tolist() == [0, 1, 0, 1, 1, 1, 1]
    assert head.group_names() == ["class 1/2 (most frequent)", "class 2/2 (rarest)"]
    caps = head.capabilities()
    assert caps.classes is not None and caps.classes.sizes == (2, 5) and caps.pos is None
    assert caps.controls == {"class_temperature", "class_top_k", "class_rarity_bias"}


def test_marginal_is_the_explicit_product_and_sums_to_one() -> None:
    head = small_head()
    hidden = torch.randn(5, 4) * 3
    log_probs = head.log_probs(hidden)
    assert torch.allclose(log_probs, explicit_log_probs(head, hidden), atol=1e-5)
    assert torch.allclose(log_probs.exp().sum(-1), torch.ones(5), atol=1e-5)


def test_token_nll_is_minus_log_marginal() -> None:
    # classes partition V, so Eq. 3's −log p1(c_t) − log p2(x_t|c_t) is exactly −log p(x_t)
    head = small_head()
    hidden, targets = torch.randn(12, 4) * 2, torch.arange(12) % 7
    nll = head.token_nll(hidden, targets)
    assert torch.allclose(nll, -head.log_probs(hidden).gather(1, targets[:, None])[:, 0], atol=1e-5)


def test_extreme_logits_stay_finite() -> None:
    head = small_head()
    hidden = torch.randn(4, 4) * 200  # logits in the thousands: per-class maxima keep logsumexp exact
    assert torch.isfinite(head.log_probs(hidden)).all()
    assert torch.allclose(head.log_probs(hidden).exp().sum(-1), torch.ones(4), atol=1e-4)


def test_gradients_match_the_explicit_product() -> None:
    head = small_head(torch.float64)
    hidden = torch.randn(6, 4, dtype=torch.float64, requires_grad=True)
    targets = torch.tensor([0, 1, 2, 4, 5, 6])
    assert torch.autograd.gradcheck(lambda h: head.token_nll(h, targets), (hidden,))
    params = [hidden, head.proj.weight, head.class_proj.weight]
    ours = torch.autograd.grad(head.token_nll(hidden, targets).sum(), params)
    explicit = -explicit_log_probs(head, hidden).gather(1, targets[:, None]).sum()
    for a, b in zip(ours, torch.autograd.grad(explicit, params), strict=True):
        assert torch.allclose(a, b, atol=1e-9)


def test_one_tokens_log_prob_and_its_gradient_are_the_marginals() -> None:
    head = small_head(torch.float64)
    hidden = torch.randn(5, 4, dtype=torch.float64, requires_grad=True)
    params = [hidden, head.proj.weight, head.class_proj.weight]
    explicit = explicit_log_probs(head, hidden)
    for token in range(len(COUNTS)):  # every class, the zero-count token's too
        ours = head.token_log_prob(hidden, token)
        assert torch.allclose(ours, explicit[:, token], atol=1e-12)
        grads = torch.autograd.grad(ours.sum(), params)
        for a, b in zip(grads, torch.autograd.grad(explicit[:, token].sum(), params, retain_graph=True), strict=True):
            assert torch.allclose(a, b, atol=1e-9)


def test_in_class_distribution() -> None:
    head = small_head()
    hidden = torch.randn(3, 4)
    groups = torch.tensor([0, 1, 1])
    in_group = head.token_log_probs_in_group(hidden, groups)
    inside = head.token_class[None, :] == groups[:, None]
    assert torch.isneginf(in_group[~inside]).all()
    assert torch.allclose(in_group.exp().sum(-1), torch.ones(3))
    joint = head.group_log_probs(hidden).gather(1, groups[:, None]) + in_group  # log p(c)·p(x|c)
    assert torch.allclose(joint[inside], head.log_probs(hidden)[inside], atol=1e-5)


def test_unfitted_heads_and_bad_class_maps_are_refused(tokenizer: VariorumTokenizer) -> None:
    with pytest.raises(ConfigError, match="needs its number of frequency classes"):
        LanguageModel(tiny_config(tokenizer.vocab_size, head="f2"))
    bare = LanguageModel(tiny_config(tokenizer.vocab_size, head="f2", f2_classes=3))
    with pytest.raises(RuntimeError, match="no frequency classes yet"):
        bare.head.log_probs(torch.randn(1, 32))
    head = small_head()
    with pytest.raises(ValueError, match="class ends must rise"):
        head.load_state_dict({"class_ends": torch.tensor([3, 2])}, strict=False)
    with pytest.raises(RuntimeError, match="no frequency classes yet"):
        head.log_probs(torch.randn(1, 4))  # the failed load left no usable class map
    with pytest.raises(ValueError, match="not a permutation"):
        small_head().load_state_dict({"freq_order": torch.zeros(7, dtype=torch.long)}, strict=False)
    softmax = LanguageModel(tiny_config(tokenizer.vocab_size))
    _, state = fit_head(tiny_config(tokenizer.vocab_size, head="f2"), tokenizer)
    with pytest.raises(ConfigError, match="does not fit the model's 'softmax' head"):
        load_fitted_head(softmax.head, state)


def test_bundle_round_trip_keeps_classes_and_logits(tmp_path: Path, tokenizer: VariorumTokenizer) -> None:
    model = build_f2_model(tokenizer)
    with torch.no_grad():  # move the class embeddings off their init so a reload is a real test
        model.head.class_proj.weight.add_(torch.randn_like(model.head.class_proj.weight))
    save_bundle(tmp_path / "f2", model, tokenizer, "# F² test\n\ntiny\n")
    loaded = load_bundle(tmp_path / "f2")
    ids = torch.tensor([[tokenizer.eos_id, *tokenizer.encode("Mara found a small")]])
    assert torch.equal(model.next_log_probs(ids), loaded.model.next_log_probs(ids))
    assert torch.equal(f2_head(loaded.model).token_class, f2_head(model).token_class)
    record = json.loads((tmp_path / "f2" / FREQ_CLASSES_FILE).read_text())
    head = f2_head(model)
    assert record["num_classes"] == head.num_groups == loaded.model.config.f2_classes
    assert sum(record["class_sizes"]) == tokenizer.vocab_size
    assert record["class_mass"] == pytest.approx(head.class_mass.tolist(), abs=1e-6)


def test_cli_trains_and_generates_with_an_f2_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = train_main([
        "--train-files", str(STORIES), "--out-dir", str(tmp_path), "--vocab-size", "300", "--n-layer", "1",
        "--n-embd", "16", "--n-head", "2", "--block-size", "16", "--max-steps", "3", "--batch-size", "2",
        "--warmup-steps", "1", "--no-progress", "--head", "f2",
    ])
    assert code == 0
    bundle = load_bundle(tmp_path / "bundle")
    expected = build_frequency_classes(bundle.tokenizer.counts)
    head = f2_head(bundle.model)
    assert bundle.model.config.f2_classes == expected.num_classes == head.num_groups
    assert head.token_class.tolist() == expected.token_class().tolist()
    log = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert all(torch.isfinite(torch.tensor(r["train_loss"])) for r in log)
    generate = ["generate", "--bundle", str(tmp_path / "bundle"), "-n", "2", "--max-new-tokens", "6", "--seed", "1"]
    assert cli_main([*generate, "--class-top-k", "2", "--class-rarity-bias", "1.5"]) == 0
    assert "variant 2 · seed 2" in capsys.readouterr().out
    assert cli_main([*generate, "--class-rarity-bias", "11"]) == 2
    assert "--class-rarity-bias must be in [-10, 10] (0 = as trained), got 11.0" in capsys.readouterr().err


def test_one_tokens_probability_in_every_class_is_the_default_per_class_projection() -> None:
    from engine.heads.base import OutputHead

    head = small_head(torch.float64)
    hidden = torch.randn(3, 4, dtype=torch.float64)
    for token in range(len(COUNTS)):  # only its own class holds it; the rest are −inf
        ours = head.token_log_prob_by_group(hidden, token)
        default = OutputHead.token_log_prob_by_group(head, hidden, token)  # one [N, V] projection per class
        assert torch.equal(torch.isneginf(ours), torch.isneginf(default))
        assert torch.allclose(ours[~torch.isneginf(ours)], default[~torch.isneginf(default)], atol=1e-12)
