"""Passage paraphrasing: alternatives per sentence, reassembly, Self-BLEU / Self-WER, API, app request, CLI."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import torch

from app.controls.modes import ModeInputs, build_request
from engine.cli import main as cli_main
from engine.config import TrainConfig
from engine.decode_fields import DecodeField
from engine.decoding.settings import DecodeConfig
from engine.decoding.token_sampler import TokenSampler
from engine.front_door import Engine, GenerationRequest
from engine.paraphrase.variants import ParaphraseVariant, score_alternative
from engine.permgen.decode import FIRST_WORD_ID, PermGenStream
from engine.permgen.model import PermGenModel
from engine.permgen.paraphrase import ONE_SENTENCE, ParaphraseStream
from engine.permgen.train import PermGenTrainer
from engine.tokenizer import VariorumTokenizer
from tests.engine.permgen.conftest import FIXTURES, tiny_permgen_config

PASSAGE = "Tom baked a cake.  It was good!\n\nHe ate it."


@pytest.fixture
def para_model(pg_tokenizer: VariorumTokenizer) -> PermGenModel:
    torch.manual_seed(0)
    config = tiny_permgen_config(pg_tokenizer.vocab_size)
    config.task = "paraphrase"
    return PermGenModel(config).eval()


def _stream(model: PermGenModel, tok: VariorumTokenizer, n: int = 2, beam: int = 1, seed: int = 5,
            **decode: object) -> tuple[ParaphraseStream, list[str]]:
    stream = ParaphraseStream(model, tok, PASSAGE, n, DecodeConfig(seed=seed, max_new_tokens=6, **decode),  # type: ignore[arg-type]
                              beam)
    texts = [""] * n
    for event in stream:
        assert event.token_id >= FIRST_WORD_ID  # words only, never the forced marks
        texts[event.variant] += event.text_delta
    return stream, texts


def test_self_bleu_and_self_wer_against_the_source_by_hand() -> None:
    same = score_alternative("He didn't go home.", "he did n't go home .")
    assert (same.self_bleu, same.self_wer, same.text) == (pytest.approx(1.0), 0.0, "He didn't go home.")
    changed = score_alternative("a b c d", "a x c d")  # one substitution in four words
    assert changed.self_wer == pytest.approx(0.25) and changed.self_bleu < 1.0
    empty = score_alternative("Keep me.", "")
    assert empty.kept_source and empty.text == "Keep me." and empty.self_wer == 0.0


def test_each_variant_rewrites_every_sentence_in_the_passage_layout(
    para_model: PermGenModel, pg_tokenizer: VariorumTokenizer
) -> None:
    stream, streamed = _stream(para_model, pg_tokenizer, n=3, top_k=20)
    assert len(stream.variants) == 3
    for variant, text in zip(stream.candidates, streamed, strict=True):
        assert isinstance(variant, ParaphraseVariant) and variant.finish_reason == "done"
        assert [a.source for a in variant.alternatives] == ["Tom baked a cake.", "It was good!", "He ate it."]
        parts = [a.text for a in variant.alternatives]
        assert variant.text == f"{parts[0]}  {parts[1]}\n\n{parts[2]}"  # the passage's own separators
        assert len(variant.token_ids) <= 3 * 6  # at most max_new_tokens words per sentence
        assert variant.settings["sentence_self_wer"] == [a.self_wer for a in variant.alternatives]
        assert variant.settings["self_wer"] == pytest.approx(sum(a.self_wer for a in variant.alternatives) / 3)
        assert 0.0 <= variant.settings["self_bleu"] <= 1.0 and variant.seed == 5 + variant.index
        assert "\n\n" in text or all(a.kept_source for a in variant.alternatives[2:])  # streamed with separators
        assert all(t >= FIRST_WORD_ID for t in variant.token_ids)


def test_a_variant_is_reproduced_alone_from_its_seed(para_model: PermGenModel, pg_tokenizer: VariorumTokenizer) -> None:
    together, _ = _stream(para_model, pg_tokenizer, n=3, seed=5)
    alone, _ = _stream(para_model, pg_tokenizer, n=1, seed=7)
    assert alone.candidates[0].text == together.candidates[2].text


def test_beam_alternatives_are_the_n_best_of_one_beam(
    para_model: PermGenModel, pg_tokenizer: VariorumTokenizer
) -> None:
    beam, _ = _stream(para_model, pg_tokenizer, n=3, beam=4)
    assert beam.candidates[0].settings["beam_width"] == 4
    for j in range(3):  # N distinct hypotheses of sentence j (a beam never keeps one twice)
        assert len({tuple(v.alternatives[j].normalized.split()) for v in beam.candidates}) == 3 or any(
            v.alternatives[j].kept_source for v in beam.candidates)
    best, _ = _stream(para_model, pg_tokenizer, n=1, beam=4)  # the same width-4 beam, best hypothesis only
    assert best.candidates[0].text == beam.candidates[0].text


def _copier(model: PermGenModel, tokens: list[int], favourite: int) -> PermGenModel:
    """`model` made to write only `tokens`, `favourite` a little likelier than the others (the decoder's output
    is made a constant vector, so every step has the same distribution)."""
    with torch.no_grad():
        norm = model.backbone.decoder.layers[-1].final_layer_norm
        norm.weight.zero_()
        norm.bias.copy_(torch.nn.functional.one_hot(torch.tensor(0), norm.bias.numel()).float())
        model.head.proj.weight.zero_()
        model.head.proj.weight[tokens, 0] = 20.0
        model.head.proj.weight[favourite, 0] = 21.0
    return model


def _source_runs(tokens: list[int], length: int) -> set[tuple[int, ...]]:
    return {tuple(tokens[i:i + length]) for i in range(len(tokens) - length + 1)}


@pytest.mark.parametrize("beam", [1, 3])
def test_no_rewrite_repeats_a_longer_run_of_the_source_than_the_copy_limit(
    para_model: PermGenModel, pg_tokenizer: VariorumTokenizer, beam: int
) -> None:
    source = "the cat said , , and sat ."
    ids = pg_tokenizer.encode(source)
    doubled = next(a for a, b in itertools.pairwise(ids) if a == b)  # ", ,": one token twice in a row
    copier = _copier(para_model, ids, doubled)  # a beam writes the likeliest token again and again

    def rewrites(limit: int) -> list[list[int]]:
        stream = ParaphraseStream(copier, pg_tokenizer, source, 3, DecodeConfig(seed=3, max_new_tokens=8,
                                                                              copy_limit=limit), beam)
        list(stream)
        return [v.token_ids for v in stream.candidates]

    assert any(_source_runs(r, 2) & _source_runs(ids, 2) for r in rewrites(0))  # unlimited, it copies pairs
    for limit in (1, 2):
        for rewrite in rewrites(limit):
            assert rewrite and all(t in ids for t in rewrite)  # still writes, from the source's own tokens
            assert not _source_runs(rewrite, limit + 1) & _source_runs(ids, limit + 1)


def test_only_a_paraphrase_takes_a_copy_limit(pg_model: PermGenModel, pg_tokenizer: VariorumTokenizer) -> None:
    with pytest.raises(ValueError, match="paraphrases only; this model writes a story"):
        PermGenStream(pg_model, pg_tokenizer, [FIRST_WORD_ID], 1, DecodeConfig(copy_limit=2), ONE_SENTENCE)


def test_cancelling_keeps_the_unwritten_sentences(para_model: PermGenModel, pg_tokenizer: VariorumTokenizer) -> None:
    calls = iter(range(1000))
    stream = ParaphraseStream(para_model, pg_tokenizer, PASSAGE, 2, DecodeConfig(seed=0, max_new_tokens=6), 1,
                              should_stop=lambda: next(calls) >= 2)
    list(stream)
    for variant in stream.candidates:
        assert variant.finish_reason == "cancelled" and variant.text == PASSAGE
        assert all(a.kept_source for a in variant.alternatives)


def test_a_passage_is_written_by_one_sampler_and_its_settings_are_checked_once(
    para_model: PermGenModel, pg_tokenizer: VariorumTokenizer, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = DecodeConfig(seed=5, top_p=0.8, max_new_tokens=6)  # checked here, once
    samplers: list[TokenSampler] = []
    checked: list[str] = []
    build, check = TokenSampler.__init__, DecodeField.check
    monkeypatch.setattr(TokenSampler, "__init__", lambda self, *a: (samplers.append(self), build(self, *a))[1])
    monkeypatch.setattr(DecodeField, "check", lambda self, value: (checked.append(self.name), check(self, value))[1])
    stream = ParaphraseStream(para_model, pg_tokenizer, PASSAGE, 2, settings)
    list(stream)
    assert len(samplers) == 1  # every sentence of the passage shares it
    settings_checked = [name for name in checked if name != "beam_width"]  # the stream's own argument
    assert settings_checked == ["seed"] * len(stream.sources)  # each sentence's seed, nothing else again


def test_bad_inputs_fail_clearly(
    para_model: PermGenModel, pg_model: PermGenModel, pg_tokenizer: VariorumTokenizer
) -> None:
    with pytest.raises(ValueError, match="empty"):
        ParaphraseStream(para_model, pg_tokenizer, " \n ", 2, DecodeConfig())
    with pytest.raises(ValueError, match="not paraphrases"):
        ParaphraseStream(pg_model, pg_tokenizer, PASSAGE, 2, DecodeConfig())
    with pytest.raises(ValueError, match=r"beam_width must be in \[1, 16\]"):
        ParaphraseStream(para_model, pg_tokenizer, PASSAGE, 2, DecodeConfig(), beam_width=17)


@pytest.fixture(scope="module")
def para_bundle(tmp_path_factory: pytest.TempPathFactory, pg_tokenizer: VariorumTokenizer) -> Path:
    tmp = tmp_path_factory.mktemp("para")
    pg_tokenizer.save(tmp / "tok")
    config = tiny_permgen_config(1)
    config.task = "paraphrase"
    pairs = FIXTURES / "paraphrase"
    train = TrainConfig(train_files=[str(pairs / "fixture.src.txt")], out_dir=str(tmp / "run"), batch_size=2,
                        max_steps=2, eval_every=2, eval_batches=1, warmup_steps=1, lr=1e-3, device="cpu")
    PermGenTrainer(config, train, [str(pairs / "msr_paraphrase_fixture.txt")], tmp / "tok").run()
    return tmp / "run" / "bundle"


def test_engine_serves_the_apps_paraphrase_request(para_bundle: Path) -> None:
    model = Engine(search_dirs=[]).load(para_bundle, device="cpu")
    capabilities = model.capabilities
    assert capabilities.tasks == ("paraphrase",) and capabilities.paragraph is not None
    assert not capabilities.paragraph.sentence_order
    assert "sentence → paraphrase" in (para_bundle / "card.md").read_text()
    request = build_request("paraphrase", ModeInputs(selection=PASSAGE), 2, DecodeConfig(seed=1, max_new_tokens=4),
                            capabilities)
    assert request.prompt == PASSAGE and request.task == "paraphrase"
    events: list[int] = []
    variants = model.generate(request, on_token=lambda e: events.append(e.token_id))
    assert len(events) == sum(len(v.token_ids) for v in variants) and len(variants) == 2
    assert all("self_bleu" in v.settings and "sentence_self_wer" in v.settings for v in variants)
    with pytest.raises(ValueError, match="passage"):
        model.stream(GenerationRequest(task="paraphrase", prompt=" "))
    with pytest.raises(ValueError, match="do not apply"):
        model.stream(GenerationRequest(task="paraphrase", prompt="A b.", num_sentences=2))
    with pytest.raises(ValueError, match="cannot do task"):
        model.stream(GenerationRequest(task="story", title="x"))
    with pytest.raises(ValueError, match=r"beam_width must be in \[1, 16\]"):
        GenerationRequest(task="paraphrase", prompt="A b.", beam_width=0)


def test_cli_paraphrases_a_prompt(para_bundle: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = cli_main(["generate", "--bundle", str(para_bundle), "--task", "paraphrase", "--prompt", PASSAGE, "-n", "2",
                     "--seed", "0", "--max-new-tokens", "4", "--beam", "2", "--device", "cpu"])
    out = capsys.readouterr().out
    assert code == 0 and out.count("Self-BLEU") == 2 and out.count("Self-WER") == 2


def test_a_language_model_refuses_beam_search(tiny_bundle: Path) -> None:
    model = Engine(search_dirs=[]).load(tiny_bundle, device="cpu")
    with pytest.raises(ValueError, match="beam search is for"):
        model.stream(GenerationRequest(prompt="Once", beam_width=2))


def test_the_copy_limit_is_for_paraphrases_only(tiny_bundle: Path, para_bundle: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    code = cli_main(["generate", "--bundle", str(tiny_bundle), "--prompt", "Once", "--copy-limit", "2",
                     "--device", "cpu"])
    assert code != 0 and "--copy-limit" in capsys.readouterr().err
    model = Engine(search_dirs=[]).load(tiny_bundle, device="cpu")
    with pytest.raises(ValueError, match="paraphrases only"):
        model.stream(GenerationRequest(prompt="Once", decode=DecodeConfig(copy_limit=2)))
    assert cli_main(["generate", "--bundle", str(para_bundle), "--task", "paraphrase", "--prompt", PASSAGE,
                     "--copy-limit", "2", "--seed", "0", "--max-new-tokens", "4", "--device", "cpu"]) == 0
