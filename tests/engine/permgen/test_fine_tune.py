"""Fine-tuning a PermGen bundle for another task (`init_from`): a story model's weights start a paraphrase run."""

from __future__ import annotations

from pathlib import Path

import torch

from engine.bundles.bundle import save_bundle
from engine.config import TrainConfig
from engine.permgen.bundle import load_permgen_bundle
from engine.permgen.model import PermGenModel
from engine.permgen.train import PermGenTrainer
from engine.tokenizer import VariorumTokenizer
from tests.engine.permgen.conftest import FIXTURES, tiny_permgen_config
from tests.engine.training.test_start_weights import same_weights

PAIRS = FIXTURES / "paraphrase" / "fixture.src.txt"


def test_a_permgen_run_fine_tunes_a_story_bundle_into_paraphrases(
    pg_tokenizer: VariorumTokenizer, tmp_path: Path
) -> None:
    torch.manual_seed(0)
    pg_bundle = tmp_path / "story"
    save_bundle(pg_bundle, PermGenModel(tiny_permgen_config(pg_tokenizer.vocab_size)).eval(), pg_tokenizer,
                "# story\n\nuntrained\n", {"train": {"train_files": ["dev.txt"]}})
    config = tiny_permgen_config(pg_tokenizer.vocab_size)
    config.task = "paraphrase"
    train = TrainConfig(train_files=[str(PAIRS)], out_dir=str(tmp_path / "run"), batch_size=2, max_steps=2,
                        eval_every=2, eval_batches=1, warmup_steps=1, lr=1e-3, device="cpu", init_from=str(pg_bundle))
    trainer = PermGenTrainer(config, train, show_progress=False)
    start = load_permgen_bundle(pg_bundle)
    assert same_weights(trainer.model, start.model)
    trainer.run()
    tuned = load_permgen_bundle(tmp_path / "run" / "bundle")
    assert tuned.model.config.task == "paraphrase" and not same_weights(tuned.model, start.model)
