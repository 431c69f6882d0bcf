"""Decoding, heads, a training step, PermGen and an app request on each device (`device` fixture).

On a CPU-only machine these run on the CPU; with CUDA they run there too and catch any
generator, mask or index left on the CPU (which CUDA refuses, e.g. a CPU generator drawing
from CUDA probabilities)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from engine.decoding import DecodeConfig, generate_variants
from engine.front_door import Engine, GenerationRequest
from engine.lm.train import Trainer
from engine.model import LanguageModel
from engine.tokenizer import VariorumTokenizer
from tests.conftest import tiny_config
from tests.engine.heads.f2_support import build_f2_model
from tests.engine.lm.test_train import small_run

HEADS = [{}, {"head": "st"}, {"termination": "nmst", "termination_eps": 0.02}]


@pytest.mark.parametrize("head", HEADS, ids=["softmax", "st", "nmst"])
def test_generation_runs_on_the_device(device: torch.device, head: dict[str, object],
                                       tokenizer: VariorumTokenizer) -> None:
    torch.manual_seed(0)
    model = LanguageModel(tiny_config(tokenizer.vocab_size, **head)).eval().to(device)
    settings = DecodeConfig(max_new_tokens=40, seed=3, top_k=30, top_p=0.9, repetition_penalty=1.2)
    variants = generate_variants(model, tokenizer, "Tom went", 3, settings)  # 40 > block 32: the window slides
    assert all(v.token_ids and v.finish_reason for v in variants)


def test_f2_class_controls_and_flat_sampling_run_on_the_device(device: torch.device,
                                                               tokenizer: VariorumTokenizer) -> None:
    model = build_f2_model(tokenizer).to(device)
    for settings in (DecodeConfig(max_new_tokens=6, seed=1, class_top_k=2, class_rarity_bias=1.0),
                     DecodeConfig(max_new_tokens=6, seed=1, flat_sampling=True)):
        assert all(v.token_ids for v in generate_variants(model, tokenizer, "Mara", 2, settings))


def test_head_distributions_live_on_the_device(device: torch.device, tokenizer: VariorumTokenizer) -> None:
    model = build_f2_model(tokenizer).to(device)
    ids = torch.tensor([[tokenizer.eos_id, *tokenizer.encode("The dog ran.")]], device=device)
    log_probs = model.next_log_probs(ids)  # [1, T, V]
    assert log_probs.device.type == device.type
    torch.testing.assert_close(log_probs.logsumexp(-1), torch.zeros(log_probs.shape[:2], device=device),
                               atol=1e-4, rtol=0)


def test_training_step_runs_on_the_device(device: torch.device, tmp_path: Path) -> None:
    trainer = Trainer(tiny_config(320), small_run(tmp_path, 2, device=device.type), show_progress=False)
    trainer.run()
    assert next(trainer.model.parameters()).device.type == device.type
    assert (tmp_path / "bundle" / "config.json").is_file()


def test_request_streams_on_the_device(device: torch.device, tiny_bundle: Path) -> None:
    model = Engine([]).load(tiny_bundle, device=device.type)
    request = GenerationRequest(prompt="Tom", n=2, decode=DecodeConfig(max_new_tokens=8, seed=5))
    assert len([v.text for v in model.generate(request)]) == 2
