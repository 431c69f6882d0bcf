"""Training (π-SGD orders per step), save → load, the engine API and the CLI for PermGen bundles, and a lowercased
model's stories shown with names in their case (the bundle's case table and the writer's names)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from engine.bundles.bundle import BundleError, save_bundle
from engine.cli import main as cli_main
from engine.config import TrainConfig
from engine.data.text import WORD, display_paragraph
from engine.data.truecase import CaseTable
from engine.decoding.settings import DecodeConfig
from engine.front_door import Engine, GenerationRequest
from engine.loaded_model import OrderError
from engine.permgen.bundle import load_permgen_bundle
from engine.permgen.loaded import PermGenLoadedModel
from engine.permgen.model import PermGenModel, collate
from engine.permgen.train import PermGenTrainer
from engine.tokenizer import VariorumTokenizer
from engine.word_sources import read_bundle_words
from tests.engine.permgen.conftest import STORIES, tiny_permgen_config


def _trainer(tmp_path: Path, permute: bool, tokenizer_dir: Path) -> PermGenTrainer:
    config = tiny_permgen_config(1)  # the trainer sets the vocabulary size from the tokenizer
    config.permute = permute
    train = TrainConfig(train_files=[str(STORIES)], out_dir=str(tmp_path / ("pg" if permute else "base")),
                        batch_size=4, max_steps=4, eval_every=2, eval_batches=1, warmup_steps=1, lr=1e-3, device="cpu")
    return PermGenTrainer(config, train, valid_files=[str(STORIES)], tokenizer_dir=tokenizer_dir)


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory, pg_tokenizer: VariorumTokenizer) -> PermGenTrainer:
    tmp = tmp_path_factory.mktemp("permgen")
    pg_tokenizer.save(tmp / "tok")
    trainer = _trainer(tmp, True, tmp / "tok")
    trainer.run()
    return trainer


def test_each_step_uses_fresh_permutations_of_each_example(trained: PermGenTrainer) -> None:
    assert len(trained.orders_log) == 4
    for orders in trained.orders_log:
        assert all(sorted(order) == [1, 2, 3, 4, 5] for order in orders)  # fixture stories have 5 sentences
    assert len({tuple(o) for orders in trained.orders_log for o in orders}) > 4  # they vary
    summary = json.loads((Path(trained.train_config.out_dir) / "bundle" / "config.json").read_text())
    assert summary["kind"] == "permgen" and summary["permgen"]["permute"] is True


def test_no_permute_baseline_uses_the_natural_order(tmp_path: Path, pg_tokenizer: VariorumTokenizer) -> None:
    pg_tokenizer.save(tmp_path / "tok")
    trainer = _trainer(tmp_path, False, tmp_path / "tok")
    for step in range(2):
        trainer.step(step)
    assert all(order == [1, 2, 3, 4, 5] for orders in trainer.orders_log for order in orders)


def test_save_load_round_trip_gives_identical_outputs(
    tmp_path: Path, pg_model: PermGenModel, pg_tokenizer: VariorumTokenizer
) -> None:
    save_bundle(tmp_path / "b", pg_model, pg_tokenizer, "# card\n\nTiny.\n")
    loaded = load_permgen_bundle(tmp_path / "b")
    batch = collate(trained_examples(pg_tokenizer), [[2, 1]])
    with torch.no_grad():
        assert torch.equal(loaded.model.token_nll(batch), pg_model.token_nll(batch))
    (tmp_path / "b" / "model.safetensors").write_bytes(b"broken")
    with pytest.raises(BundleError, match="corrupt"):
        load_permgen_bundle(tmp_path / "b")


def trained_examples(tok: VariorumTokenizer) -> list:  # type: ignore[type-arg]
    from engine.permgen.model import EncodedExample

    return [EncodedExample(tok.encode("title : a"), [tok.encode("one ."), tok.encode("two .")])]


def test_engine_loads_and_generates_a_story(trained: PermGenTrainer) -> None:
    bundle = Path(trained.train_config.out_dir) / "bundle"
    model = Engine(search_dirs=[]).load(bundle, device="cpu")
    assert isinstance(model, PermGenLoadedModel)
    capabilities = model.capabilities
    assert capabilities.tasks == ("story",) and capabilities.beam_search and capabilities.paragraph is not None
    assert capabilities.paragraph.sentence_order and capabilities.paragraph.max_sentences == 10
    request = GenerationRequest(task="story", title="The Cake", n=2, num_sentences=3, sentence_order=[2, 3, 1],
                                decode=DecodeConfig(seed=1, max_new_tokens=5))
    tokens: list[int] = []
    variants = model.generate(request, on_token=lambda e: tokens.append(e.token_id))
    assert len(tokens) == sum(len(v.token_ids) for v in variants)
    assert all(getattr(v, "order", None) == [2, 3, 1] for v in variants)
    assert "keywords : cake" in model.source_text(request)  # keywords from the title
    with pytest.raises(ValueError, match="cannot do task"):
        model.stream(GenerationRequest(task="abstract", title="x"))
    with pytest.raises(OrderError):
        GenerationRequest(task="story", title="x", num_sentences=3, sentence_order=[1, 2])


def test_cli_generates_a_story(trained: PermGenTrainer, capsys: pytest.CaptureFixture[str]) -> None:
    bundle = Path(trained.train_config.out_dir) / "bundle"
    code = cli_main(["generate", "--bundle", str(bundle), "--task", "story", "--title", "the cake", "-n", "2",
                     "--num-sentences", "3", "--sentence-order", "3", "--seed", "0", "--max-new-tokens", "4",
                     "--device", "cpu"])
    out = capsys.readouterr().out
    assert code == 0 and out.count("written in order [3,") == 2


def test_a_length_pool_batches_examples_of_similar_length(tmp_path: Path, pg_tokenizer: VariorumTokenizer) -> None:
    pg_tokenizer.save(tmp_path / "tok")
    train = TrainConfig(train_files=[str(STORIES)], out_dir=str(tmp_path / "pooled"), batch_size=2, max_steps=2,
                        length_pool=4, device="cpu")
    trainer = PermGenTrainer(tiny_permgen_config(1), train, valid_files=[str(STORIES)], tokenizer_dir=tmp_path / "tok")
    length = [len(e.source) + sum(len(s) + 2 for s in e.sentences) for e in trainer.train_data]
    pooled = [trainer.batches.global_batch(s).tolist() for s in range(len(length) // 2)]
    plain = [[i, j] for i, j in zip(range(0, len(length), 2), range(1, len(length), 2), strict=False)]
    spread = [sum(abs(length[a] - length[b]) for a, b in batches) for batches in (pooled, plain)]
    assert spread[0] <= spread[1]
    assert trainer.step(0) > 0  # trains on them


def test_stories_are_shown_with_the_bundle_case_and_the_writer_names(
    trained: PermGenTrainer, tmp_path: Path
) -> None:
    bundle = tmp_path / "bundle"
    shutil.copytree(Path(trained.train_config.out_dir) / "bundle", bundle)
    words = read_bundle_words(bundle)
    assert words is not None
    CaseTable({w: w.upper() for w in words if len(w) > 1}).write(bundle)  # every word shouts: easy to see
    model = Engine(search_dirs=[]).load(bundle, device="cpu")
    assert isinstance(model, PermGenLoadedModel)
    request = GenerationRequest(task="story", title="the cake", keywords=["Zed", "cake"], n=2, num_sentences=3,
                                decode=DecodeConfig(seed=1, max_new_tokens=6, real_words=True))
    table = model.case_table(request)
    assert table is not None and table.forms["zed"] == "Zed" and table.forms["cake"] == "CAKE"
    variants = model.generate(request)
    for variant in variants:
        plain = display_paragraph([variant.sentences[t] for t in sorted(variant.sentences)])  # type: ignore[attr-defined]
        assert variant.text == table.restore(plain)
        assert any(w.isupper() for w in WORD.findall(variant.text))  # a training word of the table, in its case
    model.permgen.model.config.lowercase = False  # a cased model writes its own case
    assert model.case_table(request) is None
