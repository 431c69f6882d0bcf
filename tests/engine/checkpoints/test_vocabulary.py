"""An imported vocabulary cuts text exactly as the checkpoint's own tokenizer does, renumbered with our
special tokens first, and the embedding rows move with the ids."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from transformers import AutoTokenizer, PreTrainedTokenizerFast

from engine.checkpoints.inspect import CheckpointError, inspect_checkpoint
from engine.checkpoints.vocabulary import import_vocabulary, move_rows
from engine.tokenizer import EOS, PAD, SPECIAL_TOKENS

TEXTS = ["The cat sat on the mat.", "  Tom's naïve dog — 42 times!\nThen home.", "<|endoftext|> typed by a writer"]


def test_gpt2_text_is_cut_as_the_checkpoint_cuts_it(gpt2_folder: Path) -> None:
    imported = import_vocabulary(inspect_checkpoint(gpt2_folder))
    theirs = AutoTokenizer.from_pretrained(str(gpt2_folder), local_files_only=True)
    new_id = {row: i for i, row in enumerate(imported.source_rows) if row >= 0}
    for text in TEXTS[:2]:
        ours = imported.tokenizer.encode(text)
        assert ours == [new_id[t] for t in theirs.encode(text)]
        assert imported.tokenizer.decode(ours) == text
    # a writer typing the end-of-text marker gets text, never the control id (ours or theirs)
    assert imported.tokenizer.eos_id not in imported.tokenizer.encode(TEXTS[2])


def test_specials_come_first_and_eos_takes_the_end_of_text_row(gpt2_folder: Path) -> None:
    imported = import_vocabulary(inspect_checkpoint(gpt2_folder))
    vocab = json.loads((gpt2_folder / "vocab.json").read_text())
    rows = imported.source_rows
    assert rows[SPECIAL_TOKENS.index(EOS)] == vocab["<|endoftext|>"]
    assert rows[1 : len(SPECIAL_TOKENS)] == [-1] * 22  # pad and the sentence marks: new rows
    assert imported.tokenizer.vocab_size == len(vocab) + len(SPECIAL_TOKENS) - 1 == len(rows)
    assert sorted(r for r in rows if r >= 0) == sorted(vocab.values())  # every checkpoint row used once


def test_bart_eos_and_pad_take_their_rows(bart_folder: Path) -> None:
    imported = import_vocabulary(inspect_checkpoint(bart_folder))
    theirs = PreTrainedTokenizerFast(tokenizer_file=str(bart_folder / "tokenizer.json"))
    new_id = {row: i for i, row in enumerate(imported.source_rows) if row >= 0}
    assert imported.tokenizer.encode(TEXTS[0]) == [new_id[t] for t in theirs.encode(TEXTS[0])]
    rows = imported.source_rows
    assert (rows[SPECIAL_TOKENS.index(EOS)], rows[SPECIAL_TOKENS.index(PAD)]) == (2, 1)  # </s>, <pad>


def test_rows_move_with_their_ids_and_new_rows_start_at_the_mean() -> None:
    table = torch.arange(12, dtype=torch.float32).reshape(4, 3)  # 4 checkpoint rows
    moved = move_rows(table, [3, -1, 0, 1, 2])
    assert torch.equal(moved[0], table[3]) and torch.equal(moved[2:], table[:3])
    assert torch.allclose(moved[1], table.mean(dim=0))


def test_a_vocabulary_without_end_of_text_is_refused(gpt2_folder: Path, tmp_path: Path) -> None:
    folder = Path(shutil.copytree(gpt2_folder, tmp_path / "no-eos"))
    vocab = json.loads((folder / "vocab.json").read_text())
    vocab["<|notend|>"] = vocab.pop("<|endoftext|>")
    (folder / "vocab.json").write_text(json.dumps(vocab))
    with pytest.raises(CheckpointError, match=r"no end-of-text token \(<\|endoftext\|>\)"):
        import_vocabulary(inspect_checkpoint(folder))


def test_a_new_row_is_never_likelier_than_one_over_the_checkpoints_vocabulary() -> None:
    torch.manual_seed(0)
    table = torch.randn(50, 8) * 3  # [V, D] checkpoint rows
    moved = move_rows(table, [-1] * 22 + list(range(50)))  # our 22 special rows first, all new
    hidden = torch.randn(1000, 8) * 5  # any hidden states
    probs = torch.softmax(hidden @ moved.T, dim=-1)  # tied output layer
    assert float(probs[:, :22].max()) <= 1 / 50 + 1e-7
