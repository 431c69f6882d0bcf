"""A fine-tune takes its start bundle's sizes, and its weights in the run's kind of decoder positions."""

from __future__ import annotations

from pathlib import Path

import torch

from engine.bundles.bundle import save_bundle
from engine.permgen.config import PermGenConfig
from engine.permgen.model import PermGenModel
from engine.permgen.start import start_sizes, start_with_positions
from engine.permgen.train import build_parser, run_configs
from engine.tokenizer import VariorumTokenizer
from tests.engine.permgen.conftest import tiny_permgen_config


def _absolute(vocab_size: int) -> PermGenModel:
    config = tiny_permgen_config(vocab_size)
    config.positions, config.permute, config.lowercase = "absolute", False, False
    torch.manual_seed(0)
    return PermGenModel(PermGenConfig.from_dict(config.to_dict())).eval()


def test_absolute_positions_become_in_sentence_positions(pg_tokenizer: VariorumTokenizer) -> None:
    start = _absolute(pg_tokenizer.vocab_size)
    run = tiny_permgen_config(pg_tokenizer.vocab_size)  # hierarchical, max_sentence_len 12
    moved = start_with_positions(start, run)
    decoder, theirs = moved.backbone.decoder, start.backbone.decoder
    assert decoder.embed_local is not None and decoder.embed_sentence is not None
    assert theirs.embed_positions is not None and moved.config.positions == "hierarchical"
    assert torch.equal(decoder.embed_local.weight, theirs.embed_positions.weight[:12])  # [12, D]
    assert not decoder.embed_sentence.weight.any()
    state = start.state_dict()
    assert all(torch.equal(state[k], v) for k, v in moved.state_dict().items() if "embed_local" not in k
               and "embed_sentence" not in k)
    assert start_with_positions(start, start.config) is start


def test_a_run_takes_the_start_bundles_sizes_and_flags_win(pg_tokenizer: VariorumTokenizer, tmp_path: Path) -> None:
    start = _absolute(pg_tokenizer.vocab_size)
    save_bundle(tmp_path / "start", start, pg_tokenizer, "# start\n", {})
    model, permgen = start_sizes(tmp_path / "start")
    assert model["n_embd"] == 32 and permgen["encoder_layers"] == 1 and permgen["lowercase"] is False
    args = build_parser().parse_args(["--init-from", str(tmp_path / "start"), "--max-sentence-len", "9",
                                      "--train-files", "x.txt"])
    config, train = run_configs(args)
    assert (config.model.n_embd, config.model.n_layer, config.model.vocab_size) == (32, 2, pg_tokenizer.vocab_size)
    assert config.max_source_len == 32 and not config.lowercase and config.max_sentence_len == 9
    assert config.positions == "hierarchical" and train.init_from == str(tmp_path / "start")
