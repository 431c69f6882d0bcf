"""The one training loop (engine/training/loop.py) under both families: a tiny language model and a
tiny PermGen model learn a memorisable fixture, write a bundle the one reader loads and the engine
generates from; chunked training resumes to the same weights; accumulation; early stopping."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file

from engine.bundles.bundle import load_model_bundle
from engine.config import ConfigError, TrainConfig
from engine.decoding import DecodeConfig
from engine.front_door import Engine, GenerationRequest, LoadedModel
from engine.lm.train import Trainer
from engine.model import LanguageModel
from engine.permgen.loaded import PermGenLoadedModel
from engine.permgen.model import PermGenModel
from engine.permgen.train import PermGenTrainer
from engine.permgen.train import main as permgen_main
from engine.training.loop import training_finished
from tests.conftest import tiny_config
from tests.engine.permgen.conftest import STORIES, tiny_permgen_config

SENTENCE = "the red fox jumps over the lazy dog and runs home ."


@pytest.fixture(scope="module")
def memorisable(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One sentence, many times: a corpus a tiny model can learn by heart in a few dozen steps."""
    path = tmp_path_factory.mktemp("corpus") / "fox.txt"
    path.write_text("\n\n".join([SENTENCE] * 40) + "\n")
    return path


def _train(out: Path, steps: int, **overrides: object) -> TrainConfig:
    settings: dict[str, object] = {"out_dir": str(out), "batch_size": 4, "max_steps": steps, "lr": 3e-3,
                                   "min_lr": 3e-4, "warmup_steps": 2, "eval_every": 1000, "save_every": 1000,
                                   "eval_batches": 2, "seed": 7, "device": "cpu"}
    settings.update(overrides)
    return TrainConfig(**settings)  # type: ignore[arg-type]


def _log(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


def _weights(out: Path) -> dict[str, torch.Tensor]:
    return load_file(str(out / "checkpoint" / "model.safetensors"))


def test_language_model_learns_saves_loads_and_generates(tmp_path: Path, memorisable: Path) -> None:
    config = _train(tmp_path, 40, train_files=[str(memorisable)], valid_fraction=0.0, lr=1e-2, min_lr=1e-3)
    trainer = Trainer(tiny_config(300), config, show_progress=False)
    before = trainer.evaluate()
    summary = trainer.run()
    assert summary["valid_loss"] < before / 4  # learnt by heart
    log = _log(tmp_path)
    assert [r["step"] for r in log] == list(range(1, 41)) and all(r["tokens_per_s"] > 0 for r in log)
    bundle = load_model_bundle(tmp_path / "bundle")
    assert isinstance(bundle.model, LanguageModel) and bundle.provenance["summary"]["step"] == 40
    model = Engine(search_dirs=[]).load(tmp_path / "bundle", device="cpu")
    assert isinstance(model, LoadedModel)
    variants = model.generate(GenerationRequest(prompt="the red fox", n=1,
                                                decode=DecodeConfig(greedy=True, max_new_tokens=12)))
    assert variants[0].text.startswith(" jumps over the")  # the memorised sentence


def test_permgen_learns_saves_half_precision_loads_and_generates(tmp_path: Path) -> None:
    config = _train(tmp_path, 30, train_files=[str(STORIES)], valid_fraction=0.0, bundle_dtype="bfloat16", lr=1e-2,
                    eval_every=10)
    trainer = PermGenTrainer(tiny_permgen_config(330), config, show_progress=False)
    before = trainer.evaluate()
    summary = trainer.run()
    assert summary["valid_nll_natural"] < before / 2
    log = _log(tmp_path)
    assert log[-1]["train_loss"] < log[0]["train_loss"] / 2
    assert [r["step"] for r in log if "valid_nll_natural" in r] == [10, 20, 30]
    stored = load_file(str(tmp_path / "bundle" / "model.safetensors"))
    assert {t.dtype for t in stored.values()} == {torch.bfloat16}
    bundle = load_model_bundle(tmp_path / "bundle")
    assert isinstance(bundle.model, PermGenModel) and "loss_curve.png" in {p.name for p in tmp_path.iterdir()}
    model = Engine(search_dirs=[]).load(tmp_path / "bundle", device="cpu")
    assert isinstance(model, PermGenLoadedModel)
    request = GenerationRequest(task="story", title="the cake", n=1, num_sentences=2,
                                decode=DecodeConfig(seed=0, max_new_tokens=8))
    assert model.generate(request)[0].token_ids


def test_permgen_resume_from_a_chunk_gives_the_weights_of_one_run(tmp_path: Path) -> None:
    def trainer(out: str) -> PermGenTrainer:
        config = _train(tmp_path / out, 6, train_files=[str(STORIES)], valid_fraction=0.0, eval_every=2)
        return PermGenTrainer(tiny_permgen_config(330), config, show_progress=False)

    straight = trainer("straight").run()
    trainer("chunked").run(chunk_steps=4)
    assert not (tmp_path / "chunked" / "bundle").exists()
    resumed = trainer("chunked")
    resumed.run(resume=True)
    assert len(resumed.orders_log) == 2  # only steps 5 and 6 ran after the resume
    a, b = _weights(tmp_path / "straight"), _weights(tmp_path / "chunked")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    losses = [[r["train_loss"] for r in _log(tmp_path / out)] for out in ("straight", "chunked")]
    assert losses[0] == losses[1]
    finished = trainer("chunked").run(resume=True)  # resumed at its end: the bundle is written again, measured
    assert finished["valid_nll_natural"] == pytest.approx(straight["valid_nll_natural"])
    assert "natural order: nan" not in (tmp_path / "chunked" / "bundle" / "card.md").read_text()


def test_permgen_gradient_accumulation_matches_the_full_batch(tmp_path: Path) -> None:
    weights = []
    for accum in (1, 2):
        out = tmp_path / str(accum)
        config = _train(out, 3, train_files=[str(STORIES)], valid_fraction=0.0, grad_accum=accum,
                        precision="float32")  # bf16 products round differently for a half batch's shapes
        trainer = PermGenTrainer(tiny_permgen_config(330), config, show_progress=False)
        trainer.run()
        weights.append(trainer.model.state_dict())
    # k_proj biases shift every attention logit of a query equally: their true gradient is 0, so AdamW
    # turns float noise into lr-sized steps there; every other weight must agree
    assert all(torch.allclose(weights[0][k], weights[1][k], atol=1e-5) for k in weights[0]
               if not k.endswith("k_proj.bias"))


SCRIPTED_LOSSES = {1: 3.0, 2: 2.0, 3: 2.5, 4: 2.6, 5: 1.0, 6: 1.0}  # step → validation loss


class ScriptedTrainer(Trainer):
    """A language-model run whose validation loss follows SCRIPTED_LOSSES (to exercise early stopping)."""

    def begin_step(self, step: int) -> None:
        super().begin_step(step)
        self.step_done = step + 1

    def after_resume(self, step: int) -> None:
        super().after_resume(step)
        self.step_done = step

    def validation(self) -> dict[str, float]:
        return {"valid_loss": SCRIPTED_LOSSES[self.step_done]}


def test_early_stopping_stops_writes_the_bundle_and_survives_chunks(tmp_path: Path) -> None:
    def run(out: str, **kwargs: Any) -> dict[str, Any]:
        config = _train(tmp_path / out, 6, train_files=[str(STORIES)], valid_fraction=0.2, eval_every=1,
                        early_stop_patience=2)
        return ScriptedTrainer(tiny_config(300), config, show_progress=False).run(**kwargs)

    summary = run("straight")
    assert summary["stopped_early"] and summary["step"] == 4  # 2.5 and 2.6 did not beat 2.0
    assert "Steps: 4 (stopped early: no better validation loss in 2 evaluations)" in (
        tmp_path / "straight" / "bundle" / "card.md").read_text()
    state = json.loads((tmp_path / "straight" / "checkpoint" / "state.json").read_text())
    assert state["step"] == 4 and state["early_stop"]["best_step"] == 2 and state["early_stop"]["stopped"]
    run("chunked", chunk_steps=3)
    assert not (tmp_path / "chunked" / "bundle").exists()
    assert run("chunked", resume=True)["stopped_early"]
    assert [r["step"] for r in _log(tmp_path / "chunked")] == [1, 2, 3, 4]
    a, b = _weights(tmp_path / "straight"), _weights(tmp_path / "chunked")
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert run("chunked", resume=True)["step"] == 4  # an early-stopped run is finished: nothing more trains
    assert [r["step"] for r in _log(tmp_path / "chunked")] == [1, 2, 3, 4]
    assert "Steps: 4 (stopped early" in (tmp_path / "chunked" / "bundle" / "card.md").read_text()
    assert training_finished(state)  # what build-recipe asks before it evaluates the bundle
    assert not training_finished({**state, "early_stop": {**state["early_stop"], "stopped": False}})
    assert training_finished({**state, "step": 6, "early_stop": {}})


def test_resuming_with_another_model_is_refused(tmp_path: Path) -> None:
    config = _train(tmp_path, 4, train_files=[str(STORIES)], valid_fraction=0.2)
    Trainer(tiny_config(300), config, show_progress=False).run(chunk_steps=2)
    other = Trainer(tiny_config(300, n_layer=1), config, show_progress=False)
    with pytest.raises(ConfigError, match=r"written for another model config \('model' differs\)"):
        other.run(resume=True)


@pytest.mark.parametrize(("field", "value", "message"), [
    ("early_stop_patience", -1, "early_stop_patience must be >= 0"),
    ("bundle_dtype", "int8", "bundle_dtype must be one of"),
])
def test_bad_loop_settings_are_named(field: str, value: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        TrainConfig(**{field: value})  # type: ignore[arg-type]


def test_permgen_refuses_torchrun(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(ConfigError, match="trains in one process"):
        PermGenTrainer(tiny_permgen_config(330), _train(tmp_path, 1, train_files=[str(STORIES)]))


def test_train_permgen_takes_the_shared_run_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--train-files", str(STORIES), "--out-dir", str(tmp_path), "--vocab-size", "330", "--n-layer", "1",
            "--n-embd", "16", "--n-head", "2", "--encoder-layers", "1", "--max-sentence-len", "12",
            "--max-steps", "2", "--batch-size", "2", "--warmup-steps", "1", "--device", "cpu", "--no-progress"]
    assert permgen_main([*argv, "--chunk-steps", "1"]) == 0
    assert permgen_main([*argv, "--resume"]) == 0
    assert [r["step"] for r in _log(tmp_path)] == [1, 2]
    assert isinstance(load_model_bundle(tmp_path / "bundle").model, PermGenModel)
    assert "step 2: train loss" in capsys.readouterr().out  # the loop's progress line
