"""An imported GPT-2 computes the checkpoint's own logits, under the renumbered ids."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from transformers import GPT2LMHeadModel

from engine.checkpoints.gpt2_import import import_gpt2
from engine.checkpoints.inspect import CheckpointError, inspect_checkpoint
from engine.checkpoints.vocabulary import import_vocabulary


def test_the_imported_model_gives_the_checkpoints_logits(gpt2_folder: Path) -> None:
    info = inspect_checkpoint(gpt2_folder)
    model, tokenizer = import_gpt2(info, dropout=0.0)
    theirs = GPT2LMHeadModel.from_pretrained(str(gpt2_folder), local_files_only=True).eval()
    source_rows = torch.tensor(import_vocabulary(info).source_rows)  # [V_new] checkpoint row of each new id
    known = (source_rows >= 0).nonzero()[:, 0]  # new ids of the checkpoint's tokens
    ids = tokenizer.encode("The cat sat on the mat. A dog ran home.")
    with torch.no_grad():
        hidden = model.eval().hidden_states(torch.tensor([ids]))  # [1, T, D]
        ours = model.head.logits(hidden[0])  # [T, V_new]
        expected = theirs(source_rows[ids][None]).logits[0]  # [T, V_checkpoint]
    assert model.config.vocab_size == len(source_rows) == tokenizer.vocab_size
    assert torch.allclose(ours[:, known], expected[:, source_rows[known]], atol=1e-5)


def test_a_bart_checkpoint_or_a_foreign_activation_is_refused(gpt2_folder: Path, bart_folder: Path,
                                                             tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="not GPT-2"):
        import_gpt2(inspect_checkpoint(bart_folder))
    folder = Path(shutil.copytree(gpt2_folder, tmp_path / "relu"))
    config = json.loads((folder / "config.json").read_text())
    config["activation_function"] = "relu"
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="activation 'relu' is not GPT-2's tanh GELU"):
        import_gpt2(inspect_checkpoint(folder))
