"""The plain-BART baseline (absolute decoder positions, Table 2) and exact resume of train-permgen."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from engine.config import ConfigError, TrainConfig
from engine.decoding.settings import DecodeConfig
from engine.permgen.config import PermGenConfig
from engine.permgen.control import OrderControl
from engine.permgen.decode import PermGenStream
from engine.permgen.marks import split_marked
from engine.permgen.model import EncodedExample, PermGenModel, collate
from engine.permgen.train import PermGenTrainer
from engine.tokenizer import VariorumTokenizer
from tests.engine.permgen.conftest import STORIES, tiny_permgen_config

EXAMPLE = EncodedExample([40, 41, 42], [[50, 51], [52], [53, 54, 55]])


@pytest.fixture
def absolute_model(pg_tokenizer: VariorumTokenizer) -> PermGenModel:
    torch.manual_seed(0)
    config = tiny_permgen_config(pg_tokenizer.vocab_size)
    config.positions = "absolute"
    return PermGenModel(config).eval()


def test_absolute_mode_has_position_rows_and_no_sentence_tables(absolute_model: PermGenModel) -> None:
    decoder = absolute_model.backbone.decoder
    assert decoder.embed_sentence is None and decoder.embed_local is None and not decoder.hierarchical
    assert decoder.embed_positions is not None
    assert decoder.embed_positions.num_embeddings == 10 * 12 + 1  # start token + 10 sentences of 12 positions
    with pytest.raises(ConfigError, match="positions must be one of"):
        PermGenConfig(positions="relative")


def test_absolute_embedding_is_token_plus_its_index(absolute_model: PermGenModel) -> None:
    """Hand check of Y = Y_token + Y_position: the same token at index 0 and 3 differs by the rows' difference."""
    decoder = absolute_model.backbone.decoder
    ids = torch.tensor([[60, 61, 62, 60]])
    zeros = torch.zeros_like(ids)
    embedded = decoder.embed(ids, zeros, zeros)[0]
    assert decoder.embed_positions is not None
    rows = decoder.embed_positions.weight
    torch.testing.assert_close(embedded[3] - embedded[0], rows[3] - rows[0])
    torch.testing.assert_close(decoder.embed(ids[:, 2:], zeros[:, 2:], zeros[:, 2:], past_len=2)[0], embedded[2:])


def test_absolute_positions_see_the_order_and_hierarchical_ones_do_not(
    absolute_model: PermGenModel, pg_model: PermGenModel
) -> None:
    """Sentence 3's first word: hierarchical positions embed it the same in orders (3,1,2) and (1,2,3)."""
    first, last = collate([EXAMPLE], [[3, 1, 2]]), collate([EXAMPLE], [[1, 2, 3]])
    i, j = 2, int((last.decoder_input[0] == 53).nonzero()[0, 0])  # the word 53 as a decoder input
    for model, same in ((pg_model, True), (absolute_model, False)):
        decoder = model.backbone.decoder
        a = decoder.embed(first.decoder_input, first.sentence, first.local)[0, i]
        b = decoder.embed(last.decoder_input, last.sentence, last.local)[0, j]
        assert torch.allclose(a, b) is same


def test_absolute_cached_decoding_matches_teacher_forcing_and_decodes(
    absolute_model: PermGenModel, pg_tokenizer: VariorumTokenizer
) -> None:
    batch = collate([EXAMPLE], [[1, 2, 3]])
    backbone = absolute_model.backbone
    full = absolute_model.decoder_hidden(batch)[0]
    states, cache, steps = backbone.encode(batch.source, batch.source_mask), backbone.new_cache(), []
    with torch.no_grad():
        for t in range(batch.decoder_input.shape[1]):
            steps.append(backbone.decoder(batch.decoder_input[:, t : t + 1], batch.sentence[:, t : t + 1],
                                          batch.local[:, t : t + 1], states, batch.source_mask, past=cache)[0, 0])
    torch.testing.assert_close(torch.stack(steps), full.detach(), rtol=1e-4, atol=1e-4)
    stream = PermGenStream(absolute_model, pg_tokenizer, pg_tokenizer.encode("title : x"), 2,
                           DecodeConfig(seed=0, max_new_tokens=4), OrderControl(num_sentences=3, distinct_starts=False))
    list(stream)
    assert all(sorted(t for t, _ in split_marked(v.token_ids)) == [1, 2, 3] for v in stream.candidates)


def _trainer(out: Path, tokenizer_dir: Path, steps: int, positions: str = "absolute") -> PermGenTrainer:
    config = tiny_permgen_config(1, dropout=0.1)  # dropout: resume must restore the RNG too
    config.positions, config.permute = positions, False
    train = TrainConfig(train_files=[str(STORIES)], out_dir=str(out), batch_size=2, max_steps=steps, eval_every=100,
                        eval_batches=1, warmup_steps=1, lr=1e-3, device="cpu", save_every=100)
    return PermGenTrainer(config, train, valid_files=[str(STORIES)], tokenizer_dir=tokenizer_dir)


def test_resume_continues_exactly(tmp_path: Path, pg_tokenizer: VariorumTokenizer) -> None:
    pg_tokenizer.save(tmp_path / "tok")
    straight = _trainer(tmp_path / "a", tmp_path / "tok", 4)
    straight.run()
    chunked = _trainer(tmp_path / "b", tmp_path / "tok", 4)
    chunked.run(chunk_steps=2)
    assert not (tmp_path / "b" / "bundle").exists() and (tmp_path / "b" / "checkpoint" / "state.json").is_file()
    resumed = _trainer(tmp_path / "b", tmp_path / "tok", 4)
    resumed.run(resume=True)
    for (name, a), (_, b) in zip(straight.model.state_dict().items(), resumed.model.state_dict().items(), strict=True):
        torch.testing.assert_close(a, b, msg=name)
    logged = (tmp_path / "b" / "metrics.jsonl").read_text().splitlines()
    assert [int(line.split('"step": ')[1].split(",")[0]) for line in logged] == [1, 2, 3, 4]
    other = _trainer(tmp_path / "b", tmp_path / "tok", 4, positions="hierarchical")
    with pytest.raises(ConfigError, match="another model config"):
        other.run(resume=True)
