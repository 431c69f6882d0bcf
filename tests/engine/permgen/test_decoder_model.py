"""The decoder-only layout: its config, its sequences, the loss on the target only, and a short fine-tune on a
tiny Llama "base" that lowers the loss while the frozen weights and the vocabulary's other rows stay as they were."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from engine.bundles.bundle import load_bundle
from engine.config import ConfigError, ModelConfig, TrainConfig
from engine.model import IGNORE_INDEX
from engine.permgen.config import PermGenConfig
from engine.permgen.data import encode_examples
from engine.permgen.decoder_model import MARK_IDS, DecoderPermGenModel, decoder_collate
from engine.permgen.marks import mark_target
from engine.permgen.model import START_ID, EncodedExample
from engine.permgen.readers import read_examples
from engine.permgen.train import PermGenTrainer
from engine.tokenizer import VariorumTokenizer
from tests.engine.permgen.conftest import LLAMA, STORIES, tiny_decoder_config


def _stories(tokenizer: VariorumTokenizer) -> list[EncodedExample]:
    return encode_examples(read_examples(STORIES), tokenizer, 32, 12)


def test_the_layout_needs_a_llama_with_room_for_a_paragraph() -> None:
    config = tiny_decoder_config(300)
    assert config.positions == "rotary" and config.max_sequence_len == 1 + 32 + 10 * 12 + 1
    assert PermGenConfig.from_dict(config.to_dict()) == config  # round-trips as a bundle stores it
    with pytest.raises(ConfigError, match="decoder-only layout needs the 'llama' backbone"):
        PermGenConfig(layout="decoder-only")
    with pytest.raises(ConfigError, match="encoder-decoder layout needs the 'bart' backbone"):
        PermGenConfig(model=ModelConfig(**LLAMA))  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"positions must be one of \['rotary'\]"):
        tiny_decoder_config(300, positions="hierarchical")
    with pytest.raises(ConfigError, match=r"positions must be one of \['hierarchical', 'absolute'\]"):
        PermGenConfig(positions="rotary")
    with pytest.raises(ConfigError, match=r"reads up to 154 positions .* block_size is 100"):
        PermGenConfig(model=ModelConfig(**{**LLAMA, "block_size": 100}), layout="decoder-only",  # type: ignore[arg-type]
                      max_source_len=32, max_sentence_len=12)


def test_a_row_is_the_prefix_then_the_marked_target_scored_alone() -> None:
    long, short = EncodedExample([7, 8, 9], [[30, 31], [40]]), EncodedExample([7], [[50]])
    batch = decoder_collate([long, short], [[2, 1], [1]])
    target = mark_target(long.sentences, [2, 1])  # ⟨B-2⟩ 40 ⟨E-2⟩ ⟨B-1⟩ 30 31 ⟨E-1⟩ ⟨EOP⟩
    assert batch.input_ids[0].tolist() == [0, 7, 8, 9, START_ID, *target[:-1]]
    assert batch.targets[0].tolist() == [IGNORE_INDEX] * 4 + target  # the start token predicts the first mark
    other = mark_target(short.sentences, [1])
    assert batch.targets[1].tolist() == [IGNORE_INDEX] * 2 + other + [IGNORE_INDEX] * 6  # right padding
    assert batch.input_ids.shape == batch.targets.shape == (2, 12) and batch.orders == [[2, 1], [1]]
    tagged = [EncodedExample(e.source, e.sentences, [[9] * len(s) for s in e.sentences]) for e in (long, short)]
    groups = decoder_collate(tagged, [[2, 1], [1]], mark_group=4).target_groups  # POSG: a group per target
    assert groups is not None and groups[0].tolist() == [IGNORE_INDEX] * 4 + [4, 9, 4, 4, 9, 9, 4, 4]
    assert torch.equal(groups == IGNORE_INDEX, batch.targets == IGNORE_INDEX)


def test_the_loss_counts_the_target_tokens_only(pg_decoder: DecoderPermGenModel,
                                                pg_tokenizer: VariorumTokenizer) -> None:
    data = _stories(pg_tokenizer)[:3]
    orders = [[2, 1, *range(3, len(e.sentences) + 1)] for e in data]
    batch = pg_decoder.collate(data, orders)
    with torch.no_grad():
        nll = pg_decoder.token_nll(batch)  # [B, L]
        hidden = pg_decoder.backbone(batch.input_ids)  # [B, L, D]
        log_probs = pg_decoder.head.log_probs(hidden.flatten(0, 1)).view(*batch.targets.shape, -1)  # [B, L, V]
        loss = float(pg_decoder(batch))
    scored = batch.targets != IGNORE_INDEX
    assert bool((nll[~scored] == 0).all()) and bool((nll[scored] > 0).all())
    for row, (example, order) in enumerate(zip(data, orders, strict=True)):
        assert int(scored[row].sum()) == len(mark_target(example.sentences, order))  # marks, words, ⟨EOP⟩
        at = scored[row].nonzero()[:, 0]
        by_hand = -log_probs[row, at, batch.targets[row, at]].sum()
        assert torch.allclose(nll[row].sum(), by_hand, atol=1e-4)
    assert loss == pytest.approx(float(nll.sum(dim=1).mean()), rel=1e-6)  # Eq. 7: summed per example, batch mean


def _fine_tune(base: Path, out: Path, trainable: str, steps: int, tokenizer: VariorumTokenizer) -> PermGenTrainer:
    train = TrainConfig(train_files=[str(STORIES)], out_dir=str(out), batch_size=4, max_steps=steps, eval_every=steps,
                        eval_batches=1, warmup_steps=0, lr=1e-2, device="cpu", init_from=str(base),
                        trainable=trainable, valid_fraction=0.0, compile=False, seed=3)
    return PermGenTrainer(tiny_decoder_config(tokenizer.vocab_size), train, show_progress=False)


def test_a_few_steps_on_the_base_lower_the_loss_and_train_only_the_last_block_and_the_marks(
    llama_base: Path, pg_tokenizer: VariorumTokenizer, tmp_path: Path
) -> None:
    trainer = _fine_tune(llama_base, tmp_path / "run", "last-1", 12, pg_tokenizer)
    model = trainer.model
    assert isinstance(model, DecoderPermGenModel)
    base = load_bundle(llama_base).model.state_dict()
    marks = model.backbone.embed.weight[MARK_IDS]  # [21, D], spelled from their texts
    assert len({tuple(row.tolist()) for row in marks}) == len(MARK_IDS)  # no longer one point
    batch = model.collate(trainer.train_data, [list(range(1, len(e.sentences) + 1)) for e in trainer.train_data])
    with torch.no_grad():
        before = float(model(batch))
        spelled = marks.clone()
    trainer.run()
    model.eval()
    with torch.no_grad():
        after = float(model(batch))
    assert after < 0.8 * before
    state = model.state_dict()
    words = [i for i in range(len(base["backbone.embed.weight"])) if i not in MARK_IDS]
    assert torch.equal(state["backbone.embed.weight"][words], base["backbone.embed.weight"][words])
    assert not torch.equal(state["backbone.embed.weight"][MARK_IDS], spelled)  # the marks' rows trained
    assert all(torch.equal(state[k], v) for k, v in base.items() if k.startswith("backbone.blocks.0."))
    assert not torch.equal(state["backbone.blocks.1.qkv.weight"], base["backbone.blocks.1.qkv.weight"])
    assert trainer.trainable.row_trained == ["backbone.embed.weight"]
    last = sum(p.numel() for n, p in model.named_parameters() if n.startswith(("backbone.blocks.1.", "backbone.norm")))
    assert trainer.trainable.trained == last + len(MARK_IDS) * 32  # the block, the final norm, the marks' rows


def test_a_frozen_blocks_cache_is_refused(llama_base: Path, pg_tokenizer: VariorumTokenizer, tmp_path: Path) -> None:
    train = TrainConfig(train_files=[str(STORIES)], out_dir=str(tmp_path), init_from=str(llama_base),
                        trainable="last-1", cache_frozen_blocks=True, compile=False)
    with pytest.raises(ConfigError, match="cache_frozen_blocks does not apply to PermGen"):
        PermGenTrainer(tiny_decoder_config(pg_tokenizer.vocab_size), train, show_progress=False)
