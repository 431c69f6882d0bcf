"""`variorum train-permgen --head posg` end to end: tagged training, bundle round trip, two-stage
paraphrase / story generation with POS controls, exact resume, a missing tagger's message."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from engine.cli import main as cli_main
from engine.config import ConfigError, TrainConfig
from engine.decoding.settings import DecodeConfig
from engine.front_door import Engine, GenerationRequest
from engine.heads.posg import POSGHead
from engine.permgen.bundle import load_permgen_bundle
from engine.permgen.data import DataStats, load_examples
from engine.permgen.paraphrase_readers import both_directions
from engine.permgen.tagging import tag_targets
from engine.permgen.train import PermGenTrainer
from engine.pos import SpacyTagger, TaggerUnavailableError
from engine.pos.vocab import POS_VOCAB_FILE, PosVocabulary
from engine.tokenizer import VariorumTokenizer
from tests.engine.permgen.conftest import FIXTURES, STORIES, tiny_permgen_config

PAIRS = FIXTURES / "paraphrase" / "fixture.src.txt"
MRPC = FIXTURES / "paraphrase" / "msr_paraphrase_fixture.txt"
DATA = {"paraphrase": (PAIRS, MRPC), "story": (STORIES, STORIES)}
TINY = ["--head", "posg", "--n-layer", "2", "--n-head", "2", "--n-embd", "32", "--dropout", "0.0",
        "--encoder-layers", "1", "--max-source-len", "32", "--max-sentence-len", "12", "--batch-size", "2",
        "--max-steps", "3", "--eval-every", "3", "--eval-batches", "1", "--warmup-steps", "1", "--lr", "0.001",
        "--device", "cpu"]


def _train(out: Path, task: str, tokenizer: Path, *extra: str) -> int:
    train, valid = DATA[task]
    return cli_main(["train-permgen", *TINY, "--task", task, "--train-files", str(train), "--valid-files", str(valid),
                     "--tokenizer", str(tokenizer), "--out-dir", str(out), "--pos-cache-dir", str(out / "tags"),
                     *extra])


@pytest.fixture(scope="module", params=["paraphrase", "story"])
def bundle(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
           pg_tokenizer: VariorumTokenizer, spacy_tagger: SpacyTagger) -> Path:
    """The bundle of a 3-step posg run (the spaCy tagger is loaded once for the session)."""
    tmp = tmp_path_factory.mktemp(f"posg-{request.param}")
    pg_tokenizer.save(tmp / "tok")
    assert _train(tmp / "run", request.param, tmp / "tok") == 0
    return tmp / "run" / "bundle"


def _head(bundle: Path) -> POSGHead:
    head = load_permgen_bundle(bundle).model.head
    assert isinstance(head, POSGHead)
    return head


def test_the_bundle_carries_v_rho_built_from_the_tagged_training_targets(
    bundle: Path, spacy_tagger: SpacyTagger
) -> None:
    head = _head(bundle)
    config = json.loads((bundle / "config.json").read_text())
    assert config["model"]["pos_tags"] == list(head.tags) and "<special>" in head.tags
    assert PosVocabulary.load(bundle / POS_VOCAB_FILE) == head.vocabulary()
    assert "spacy" in config["provenance"]["pos_tagger"]
    assert "**POS head.**" in (bundle / "card.md").read_text()
    task = config["permgen"]["task"]
    examples = load_examples([DATA[task][0]], DataStats(), task=task)
    examples = both_directions(examples) if task == "paraphrase" else examples  # training reads pairs both ways
    tagged = tag_targets(examples, VariorumTokenizer.load(bundle), cache_dir=bundle.parent / "tags", progress=False,
                         tagger=spacy_tagger)
    assert head.vocabulary() == tagged.vocabulary  # the training targets' (token, tag) pairs, nothing else
    log = [json.loads(line) for line in (bundle.parent / "metrics.jsonl").read_text().splitlines()]
    assert len(log) == 3 and all(torch.isfinite(torch.tensor(r["train_loss"])) for r in log)
    assert torch.isfinite(torch.tensor(log[-1]["valid_nll_natural"]))  # the marginal: finite on held-out text


def _request(task: str, decode: DecodeConfig) -> GenerationRequest:
    if task == "paraphrase":
        return GenerationRequest(task=task, prompt="We train a small model. It runs fast.", n=3, decode=decode)
    return GenerationRequest(task=task, title="the lost kite", n=3, num_sentences=2, decode=decode)


def test_generation_draws_a_tag_then_a_token_of_that_tag(bundle: Path) -> None:
    head = _head(bundle)
    model = Engine(search_dirs=[]).load(bundle, device="cpu")
    assert model.capabilities.controls == {"pos_top_k", "pos_bias"} and model.capabilities.pos_guided
    task = json.loads((bundle / "config.json").read_text())["permgen"]["task"]
    decode = DecodeConfig(seed=3, max_new_tokens=6, pos_top_k=5, pos_bias={"adjectives": 3.0})
    variants = model.generate(_request(task, decode))
    pairs = [(g, t) for v in variants for g, t in zip(v.token_groups, v.token_ids, strict=True)]
    assert len(pairs) > 6 and all(len(v.token_groups) == len(v.token_ids) for v in variants)
    assert all(bool(head.membership[g, t]) for g, t in pairs), "a token outside its sampled tag's V_ρ"
    again = model.generate(_request(task, decode))
    assert [v.token_ids for v in again] == [v.token_ids for v in variants]


def test_cli_generates_with_pos_controls(bundle: Path, capsys: pytest.CaptureFixture[str]) -> None:
    task = json.loads((bundle / "config.json").read_text())["permgen"]["task"]
    inputs = ["--prompt", "We train a small model."] if task == "paraphrase" else ["--title", "the lost kite"]
    code = cli_main(["generate", "--bundle", str(bundle), "--task", task, *inputs, "-n", "2", "--seed", "0",
                     "--max-new-tokens", "4", "--pos-top-k", "5", "--pos-bias", "adjectives=3", "--device", "cpu"])
    out = capsys.readouterr().out
    assert code == 0 and out.count("--- variant") == 2


def _trainer(out: Path, tokenizer: Path, cache: Path) -> PermGenTrainer:
    config = tiny_permgen_config(1, head="posg", dropout=0.1)  # dropout: resume must restore the RNG too
    train = TrainConfig(train_files=[str(STORIES)], out_dir=str(out), batch_size=2, max_steps=3, eval_every=100,
                        eval_batches=1, warmup_steps=1, lr=1e-3, device="cpu", save_every=100, pos_cache_dir=str(cache))
    return PermGenTrainer(config, train, valid_files=[str(STORIES)], tokenizer_dir=tokenizer)


def test_posg_resume_continues_exactly(tmp_path: Path, pg_tokenizer: VariorumTokenizer,
                                       spacy_tagger: SpacyTagger) -> None:
    pg_tokenizer.save(tmp_path / "tok")
    straight = _trainer(tmp_path / "a", tmp_path / "tok", tmp_path / "tags")
    straight.run()
    _trainer(tmp_path / "b", tmp_path / "tok", tmp_path / "tags").run(chunk_steps=2)
    resumed = _trainer(tmp_path / "b", tmp_path / "tok", tmp_path / "tags")
    resumed.run(resume=True)
    assert straight.orders_log[2] == resumed.orders_log[0]
    for (name, a), (_, b) in zip(straight.model.state_dict().items(), resumed.model.state_dict().items(), strict=True):
        torch.testing.assert_close(a, b, msg=name)  # includes the V_ρ membership buffer
    other = _trainer(tmp_path / "b", tmp_path / "tok", tmp_path / "tags")  # as if the tagger had changed
    assert other.pos is not None
    vocabulary = other.pos.vocabulary
    token_tags = list(vocabulary.token_tags)
    token_tags[-1] = tuple(sorted({*token_tags[-1], 1 if 0 in token_tags[-1] else 0}))
    other.pos = replace(other.pos, vocabulary=PosVocabulary(vocabulary.tags, tuple(token_tags)))
    with pytest.raises(ConfigError, match="other POS tags"):
        other.run(resume=True)


def test_a_missing_tagger_is_reported_with_its_install_hint(
    tmp_path: Path, pg_tokenizer: VariorumTokenizer, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    asked: list[str] = []

    def unavailable(backend: str = "spacy") -> SpacyTagger:
        asked.append(backend)
        raise TaggerUnavailableError("Stanza POS tagger unavailable: install it with: pip install stanza")

    monkeypatch.setattr("engine.pos.training.load_tagger", unavailable)
    pg_tokenizer.save(tmp_path / "tok")
    assert _train(tmp_path / "run", "story", tmp_path / "tok", "--pos-backend", "stanza") == 2
    assert asked == ["stanza"]
    assert "error: Stanza POS tagger unavailable: install it with: pip install stanza" in capsys.readouterr().err
    assert not (tmp_path / "run" / "bundle").exists()
