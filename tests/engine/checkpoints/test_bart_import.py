"""An imported BART computes the checkpoint's own logits under the renumbered ids, always with the same weights."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from transformers import BartForConditionalGeneration

from engine.checkpoints.inspect import CheckpointError, inspect_checkpoint
from engine.checkpoints.vocabulary import import_vocabulary
from engine.permgen.bart_import import import_bart
from tests.engine.checkpoints.conftest import write_bart


def test_the_imported_model_gives_the_checkpoints_logits(bart_folder: Path) -> None:
    info = inspect_checkpoint(bart_folder)
    model, tokenizer = import_bart(info)
    model.eval()
    theirs = BartForConditionalGeneration.from_pretrained(str(bart_folder), local_files_only=True).eval()
    source_rows = torch.tensor(import_vocabulary(info).source_rows)  # [V_new] checkpoint row of each new id
    known = (source_rows >= 0).nonzero()[:, 0]  # new ids of the checkpoint's tokens
    source = torch.tensor([tokenizer.encode("The cat sat on the mat.")])  # [1, S]
    target = torch.tensor([[tokenizer.eos_id, *tokenizer.encode("A dog ran home early.")]])  # [1, T], </s> starts
    mask = torch.ones_like(source, dtype=torch.bool)
    with torch.no_grad():
        states = model.backbone.encode(source, mask)
        zeros = torch.zeros_like(target)  # absolute positions: sentence / local are not read
        hidden = model.backbone.decoder(target, zeros, zeros, states, mask)  # [1, T, D]
        ours = model.head.logits(hidden[0])  # [T, V_new]
        expected = theirs(input_ids=source_rows[source], decoder_input_ids=source_rows[target]).logits[0]
    assert model.config.model.vocab_size == len(source_rows) == tokenizer.vocab_size
    assert model.config.positions == "absolute" and model.config.task == "story" and not model.config.lowercase
    assert torch.allclose(ours[:, known], expected[:, source_rows[known]], atol=1e-5)


def test_the_same_checkpoint_always_gives_the_same_weights(bart_folder: Path) -> None:
    info = inspect_checkpoint(bart_folder)
    torch.manual_seed(1)
    first = import_bart(info)[0].state_dict()
    after = torch.rand(1)
    torch.manual_seed(1)
    second = import_bart(info)[0].state_dict()
    assert torch.equal(torch.rand(1), after)  # the import left the caller's random numbers alone
    assert first.keys() == second.keys() and all(torch.equal(first[k], second[k]) for k in first)


@pytest.mark.parametrize(("option", "value", "message"), [
    ("activation_function", "relu", "activation 'relu' is not BART's GELU"),
    ("scale_embedding", True, "scale_embedding is set"),
    ("normalize_before", True, "normalize_before is True"),
])
def test_options_our_backbone_does_not_run_are_refused(bart_folder: Path, tmp_path: Path, option: str,
                                                       value: object, message: str) -> None:
    folder = Path(shutil.copytree(bart_folder, tmp_path / option))
    config = json.loads((folder / "config.json").read_text())
    config[option] = value
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match=message):
        import_bart(inspect_checkpoint(folder))


def test_encoder_and_decoder_of_other_widths_are_refused(tmp_path: Path) -> None:
    folder = write_bart(tmp_path / "wide-decoder", decoder_ffn_dim=32)
    with pytest.raises(CheckpointError, match="encoder and decoder differ"):
        import_bart(inspect_checkpoint(folder))


def test_a_gpt2_checkpoint_is_not_bart(gpt2_folder: Path) -> None:
    with pytest.raises(CheckpointError, match="not BART"):
        import_bart(inspect_checkpoint(gpt2_folder))


def test_a_final_logits_bias_is_refused(tmp_path: Path) -> None:
    folder = write_bart(tmp_path / "biased")
    bart = BartForConditionalGeneration.from_pretrained(str(folder), local_files_only=True)
    bart.final_logits_bias.fill_(0.5)
    bart.save_pretrained(folder)
    with pytest.raises(CheckpointError, match="final_logits_bias is not zero"):
        import_bart(inspect_checkpoint(folder))
