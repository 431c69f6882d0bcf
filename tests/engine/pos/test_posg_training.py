"""End to end: `variorum train --head posg` on spaCy-tagged fixture text, bundle round trip, generation."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from engine.bundles.bundle import load_bundle
from engine.cli import main as cli_main
from engine.data.corpus import read_corpus, split_documents
from engine.decoding import DecodeConfig, DecodeSettingError, generate_variants
from engine.heads.posg import POSGHead
from engine.perplexity import held_out_documents
from engine.perplexity import main as perplexity_main
from engine.pos import SpacyTagger
from engine.pos.tags import tags_of_group
from engine.pos.training import prepare_pos_training
from engine.pos.vocab import POS_VOCAB_FILE, PosVocabulary
from engine.tokenizer import VariorumTokenizer
from tests.conftest import STORIES

ARGS = ["--head", "posg", "--vocab-size", "320", "--n-layer", "2", "--n-head", "2", "--n-embd", "32",
        "--block-size", "32", "--dropout", "0.0", "--train-files", str(STORIES), "--valid-fraction", "0.2",
        "--batch-size", "4", "--max-steps", "40", "--lr", "0.003", "--min-lr", "0.0003", "--warmup-steps", "2",
        "--eval-every", "1000", "--save-every", "1000", "--eval-batches", "2", "--seed", "5", "--no-progress"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory, spacy_tagger: SpacyTagger) -> Path:
    """Output folder of one tiny POSG training run (the spaCy tagger is already loaded)."""
    out = tmp_path_factory.mktemp("posg")
    assert cli_main(["train", *ARGS, "--out-dir", str(out), "--pos-cache-dir", str(out / "tags")]) == 0
    return out


def test_training_lowers_the_eq4_loss_and_exports_the_vocabulary(trained: Path) -> None:
    log = [json.loads(line) for line in (trained / "metrics.jsonl").read_text().splitlines()]
    assert log[-1]["train_loss"] < log[0]["train_loss"] - 1.0
    assert math.isfinite(log[-1]["valid_ppl"])  # the marginal: finite even for held-out text
    bundle = load_bundle(trained / "bundle")
    head = bundle.model.head
    assert isinstance(head, POSGHead)
    assert json.loads((trained / "bundle" / "config.json").read_text())["model"]["pos_tags"] == list(head.tags)
    saved = PosVocabulary.load(trained / "bundle" / POS_VOCAB_FILE)
    assert saved == head.vocabulary()
    assert "spacy" in json.loads((trained / "bundle" / "config.json").read_text())["provenance"]["pos_tagger"]


def test_vocabulary_comes_from_the_training_split_only(trained: Path, spacy_tagger: SpacyTagger) -> None:
    head = load_bundle(trained / "bundle").model.head
    assert isinstance(head, POSGHead)
    tokenizer = VariorumTokenizer.load(trained / "bundle")
    documents = read_corpus([STORIES])
    train, _ = split_documents(documents, 0.2)
    cache = trained / "tags"
    from_train = prepare_pos_training(train, tokenizer, cache_dir=cache, progress=False, tagger=spacy_tagger)
    from_all = prepare_pos_training(documents, tokenizer, cache_dir=cache, progress=False, tagger=spacy_tagger)
    assert head.vocabulary() == from_train.vocabulary
    assert from_all.vocabulary != from_train.vocabulary  # the held-out stories add (token, tag) pairs


def test_bundle_marginal_and_perplexity(trained: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = load_bundle(trained / "bundle").model
    ids = torch.tensor([[0, 40, 41, 42, 43]])
    log_probs = model.next_log_probs(ids)
    assert torch.allclose(log_probs.exp().sum(-1), torch.ones(1, 5), atol=1e-5)
    assert perplexity_main(["--bundle", str(trained / "bundle"), "--files", str(STORIES)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert math.isfinite(report["perplexity"])
    # per word: the same mean NLL spread over words (+ one end per document) instead of tokens
    bundle = load_bundle(trained / "bundle")
    documents = held_out_documents(bundle, [STORIES])
    tokens = sum(len(ids) + 1 for ids in bundle.tokenizer.encode_batch(documents))
    words = sum(len(d.split()) + 1 for d in documents)
    assert report["perplexity_per_word"] == pytest.approx(math.exp(report["loss"] * tokens / words), rel=1e-3)


def test_generation_ends_is_reproducible_and_stays_in_the_sampled_tag(trained: Path) -> None:
    bundle = load_bundle(trained / "bundle")
    head = bundle.model.head
    assert isinstance(head, POSGHead)
    settings = DecodeConfig(max_new_tokens=20, seed=11, top_p=0.5, pos_top_k=20)
    first = generate_variants(bundle.model, bundle.tokenizer, "Mara found", 3, settings)
    again = generate_variants(bundle.model, bundle.tokenizer, "Mara found", 3, settings)
    assert [v.token_ids for v in first] == [v.token_ids for v in again]
    for variant in first:
        assert variant.finish_reason in ("eos", "length")
        assert len(variant.token_ids) == len(variant.token_groups) <= 20
        assert all(head.membership[g, t] for g, t in zip(variant.token_groups, variant.token_ids, strict=True))
    flat = generate_variants(bundle.model, bundle.tokenizer, "Mara found", 2,
                             DecodeConfig(max_new_tokens=10, seed=3, top_p=0.5, flat_sampling=True))
    for variant in flat:  # the reported tag is one that holds the token
        assert all(head.membership[g, t] for g, t in zip(variant.token_groups, variant.token_ids, strict=True))


def test_adjective_bias_moves_the_sampled_tags(trained: Path) -> None:
    bundle = load_bundle(trained / "bundle")
    names = bundle.model.head.group_names()
    adjectives = {names.index(t) for t in tags_of_group("adjectives") if t in names}

    def share(factor: float) -> float:
        settings = DecodeConfig(max_new_tokens=20, seed=1, top_p=0.5, pos_bias={"adjectives": factor})
        variants = generate_variants(bundle.model, bundle.tokenizer, "The", 6, settings)
        groups = [g for v in variants for g in v.token_groups]
        return sum(g in adjectives for g in groups) / len(groups)

    assert share(10.0) > share(1.0) > share(0.1)
    with pytest.raises(DecodeSettingError, match="no POS group"):
        generate_variants(bundle.model, bundle.tokenizer, "The", 1, DecodeConfig(pos_bias={"FW": 2.0}))


def test_cli_generate_with_pos_controls(trained: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["generate", "--bundle", str(trained / "bundle"), "-n", "2", "--seed", "4", "--max-new-tokens", "8",
            "--top-p", "0.5", "--pos-top-k", "20", "--pos-bias", "adjectives=10", "NN=0.5"]
    assert cli_main(argv) == 0
    out = capsys.readouterr().out
    assert "--- variant 2 · seed 5 ·" in out
    assert cli_main(argv) == 0 and capsys.readouterr().out == out
    assert cli_main([*argv[:-2], "adjectives"]) == 2
    assert "expected TAG=FACTOR" in capsys.readouterr().err
    assert cli_main([*argv[:-2], "adjectives=20"]) == 2
    assert "must be a number in [0.1, 10], got 20.0" in capsys.readouterr().err
