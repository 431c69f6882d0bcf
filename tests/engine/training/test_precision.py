"""Training precision (engine/training/precision.py) and the CPU path of the loop: which precision `auto` picks,
that bf16 autocast keeps the heads' losses those of float32 (log-space maths on float32 logits), that a
bf16 run learns and is recorded, and that a checkpoint written before precision was recorded resumes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from engine.config import ConfigError, TrainConfig
from engine.lm.train import Trainer
from engine.model import LanguageModel
from engine.packed_linear import PackedLinear
from engine.permgen.model import EncodedExample, PermGenModel, collate
from engine.tokenizer import VariorumTokenizer
from engine.training.precision import resolve_precision
from engine.training.speed import build_optimizer, compile_wanted, mark_weights_updated
from tests.conftest import tiny_config
from tests.engine.evaluation.test_decoders import posg_model
from tests.engine.heads.f2_support import build_f2_model
from tests.engine.lm.test_train import small_run
from tests.engine.permgen.conftest import tiny_permgen_config

CPU = torch.device("cpu")


def test_auto_is_bf16_where_the_cpu_has_bf16_instructions_else_float32_with_a_note(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("engine.training.precision.cpu_has_fast_bf16", lambda: True)
    assert resolve_precision("auto", CPU).name == "bf16" and not resolve_precision("auto", CPU).note
    monkeypatch.setattr("engine.training.precision.cpu_has_fast_bf16", lambda: False)
    fallback = resolve_precision("auto", CPU)
    assert fallback.name == "float32" and "AVX512-BF16" in fallback.note
    assert resolve_precision("bf16", CPU).name == "bf16" and resolve_precision("float32", CPU).name == "float32"
    with pytest.raises(ConfigError, match="precision must be one of"):
        TrainConfig(precision="fp16")


def test_compile_is_the_cpu_default_for_long_runs_and_opt_in_on_cuda() -> None:
    assert compile_wanted(None, "cpu", fixed_shapes=False, max_steps=1500)
    assert not compile_wanted(None, "cpu", fixed_shapes=True, max_steps=40)  # a test's run: compiling costs more
    assert not compile_wanted(False, "cpu", fixed_shapes=True, max_steps=1500)
    assert compile_wanted(True, "cpu", fixed_shapes=False, max_steps=2)
    assert not compile_wanted(None, "cuda", fixed_shapes=True, max_steps=1500)  # the GPU path as before
    assert compile_wanted(True, "cuda", fixed_shapes=True, max_steps=2)
    assert not compile_wanted(True, "cuda", fixed_shapes=False, max_steps=2)


def _lm_batch(tokenizer: VariorumTokenizer) -> torch.Tensor:
    """Two rows of story text with eos inside, so NMST's steps restart mid-row: [2, 17]."""
    ids = [tokenizer.eos_id, *tokenizer.encode("Tom went to the park. He saw a dog.")]
    ids = (ids * 4)[:17]
    return torch.tensor([ids, ids[::-1]])


def _losses(model: torch.nn.Module, *inputs: object) -> tuple[torch.Tensor, torch.Tensor]:
    """The model's loss in float32 and under CPU bf16 autocast, same weights (no dropout)."""
    model.train()
    float32 = model(*inputs)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        bf16 = model(*inputs)
    return float32, bf16


@pytest.mark.parametrize("head", ["f2+nmst", "posg"])
def test_bf16_autocast_keeps_the_language_model_heads_losses(head: str, tokenizer: VariorumTokenizer) -> None:
    block = _lm_batch(tokenizer)
    if head == "posg":
        model: LanguageModel = posg_model(tokenizer)
        groups = (block[:, 1:] % 2,)  # observed tags NN / JJ: Eq. 4 with the group's own term
    else:
        model, groups = build_f2_model(tokenizer, termination="nmst", termination_eps=0.02), ()
    float32, bf16 = _losses(model, block[:, :-1], block[:, 1:], *groups)
    assert bf16.dtype == torch.float32  # the heads' log-space sums stay float32
    assert float(bf16.detach()) == pytest.approx(float(float32.detach()), rel=1e-2)
    bf16.backward()
    assert all(bool(torch.isfinite(p.grad).all()) for p in model.parameters() if p.grad is not None)


def test_bf16_autocast_keeps_the_permgen_loss() -> None:
    torch.manual_seed(0)
    model = PermGenModel(tiny_permgen_config(300))
    batch = collate([EncodedExample([40, 41, 42], [[50, 51, 52], [53, 54]]),
                     EncodedExample([43, 44], [[55, 56], [57, 58, 59], [60]])], [[2, 1], [3, 1, 2]])
    float32, bf16 = _losses(model, batch)
    assert bf16.dtype == torch.float32 and float(bf16.detach()) == pytest.approx(float(float32.detach()), rel=1e-2)


def test_a_bf16_run_learns_and_records_its_precision_in_log_summary_and_card(tmp_path: Path) -> None:
    trainer = Trainer(tiny_config(320), small_run(tmp_path, 30, precision="bf16", lr=1e-2, min_lr=1e-3),
                      show_progress=False)
    before = trainer.evaluate()
    summary = trainer.run()
    assert summary["valid_loss"] < before * 0.8
    assert summary["precision"] == "bf16" and summary["tokens_per_s"] > 0
    log = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert {record["precision"] for record in log} == {"bf16"}
    card = (tmp_path / "bundle" / "card.md").read_text()
    assert "- Precision: bf16 autocast (float32 weights), " in card and " target tokens/s" in card


def test_a_checkpoint_from_before_precision_was_recorded_resumes(tmp_path: Path) -> None:
    """Older checkpoints: no precision in their train section, no throughput, an unfused AdamW's state."""
    old = Trainer(tiny_config(320), small_run(tmp_path, 4), show_progress=False)
    old.optimizer = build_optimizer(old.model, old.train_config, fused=False)
    old.run(chunk_steps=2)
    state_file = tmp_path / "checkpoint" / "state.json"
    state = json.loads(state_file.read_text())
    del state["throughput"], state["train"]["precision"], state["train"]["compile"]
    state_file.write_text(json.dumps(state))
    resumed = Trainer(tiny_config(320), small_run(tmp_path, 4), show_progress=False)
    summary = resumed.run(resume=True)
    assert summary["step"] == 4 and (tmp_path / "bundle" / "card.md").is_file()
    assert all(group["fused"] for group in resumed.optimizer.param_groups)


def test_validation_after_a_fused_step_sees_the_new_weights() -> None:
    """A fused AdamW step writes in place without bumping version counters; the loop bumps them, so the
    CPU's prepacked inference weights (engine/packed_linear.py) are packed again."""
    torch.manual_seed(0)
    layer, hidden = PackedLinear(8, 5), torch.randn(3, 8)
    optimizer = build_optimizer(layer, TrainConfig(lr=0.1))
    with torch.no_grad():
        layer(hidden)  # packs the weight
    layer(hidden).sum().backward()
    optimizer.step()
    mark_weights_updated(optimizer)
    with torch.no_grad():
        torch.testing.assert_close(layer(hidden), torch.nn.functional.linear(hidden, layer.weight, layer.bias))
