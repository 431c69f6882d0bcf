"""A language model paraphrases a passage by rewording: the app's path, on the tiny untrained model."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import engine.rewording as rewording_module
from engine.bundles.bundle import load_bundle
from engine.decoding import DecodeConfig
from engine.front_door import Engine, GenerationRequest
from engine.lm.family import lm_tasks
from engine.paraphrase.variants import ParaphraseVariant
from engine.rewording import WordNetMissingError
from engine.rewording.search import Rewording, RewordSettings, SentenceScorer
from engine.rewording.stream import RewordStream
from engine.rewording.wordnet import WordNet

PASSAGE = "The children were happy because their father came home.  Hello!\n\nHe didn't buy the big car."


def request(n: int = 3, seed: int = 7, prompt: str = PASSAGE) -> GenerationRequest:
    return GenerationRequest(task="paraphrase", prompt=prompt, n=n, decode=DecodeConfig(seed=seed))


def test_each_sentence_is_its_source_or_one_of_its_rewrites_in_the_passage_layout(
        tiny_bundle: Path, parse: Callable[[str], Any]) -> None:
    model = Engine().load(tiny_bundle, device="cpu", runtime="torch")
    assert "paraphrase" in model.capabilities.tasks
    stream = model.stream(request())
    events = list(stream)
    bundle = load_bundle(tiny_bundle)
    reword = Rewording(SentenceScorer(bundle.model, bundle.tokenizer), WordNet(), parse, RewordSettings())
    sources = ["The children were happy because their father came home.", "Hello!", "He didn't buy the big car."]
    for variant in stream.variants:
        assert isinstance(variant, ParaphraseVariant) and variant.finish_reason == "done"
        texts = [a.text for a in variant.alternatives]
        assert variant.text == f"{texts[0]}  {texts[1]}\n\n{texts[2]}"  # the passage's own spaces and break
        assert texts[1] == "Hello!" and variant.alternatives[1].kept_source  # nothing to reword
        before = ["", "  ", "\n\n"]  # the text streamed ahead of each sentence's first token
        for j, alternative in enumerate(variant.alternatives):
            streamed = "".join(e.text_delta for e in events if e.variant == variant.index and e.sentence == j + 1)
            assert streamed == ("" if alternative.kept_source else before[j] + alternative.text)
    for j, source in enumerate(sources):  # variant i takes pick (i − j) mod 3, or keeps the sentence
        picks = [s.text for s in reword.rewrites(source, 3, 7 + j * 1_000_003)]
        expected = [picks[(i - j) % 3] if (i - j) % 3 < len(picks) else source for i in range(3)]
        assert [v.alternatives[j].text for v in stream.variants] == expected  # type: ignore[attr-defined]
    assert {e.sentence for e in events} <= {1, 3}


def test_the_same_seed_writes_the_same_paraphrases(tiny_bundle: Path, parse: Callable[[str], Any]) -> None:
    model = Engine().load(tiny_bundle, device="cpu", runtime="torch")
    assert [v.text for v in model.generate(request())] == [v.text for v in model.generate(request())]


def test_a_stop_between_sentences_keeps_the_rest_as_written(tiny_bundle: Path, parse: Callable[[str], Any]) -> None:
    bundle = load_bundle(tiny_bundle)
    calls = iter([False, True])
    stream = RewordStream(bundle.model, bundle.tokenizer, PASSAGE, 2, DecodeConfig(seed=1), lambda: next(calls, True))
    list(stream)
    for variant in stream.variants:
        assert variant.finish_reason == "cancelled"
        assert variant.text.endswith("Hello!\n\nHe didn't buy the big car.")  # sentences 2 and 3 not reached


def test_the_piece_after_a_name_initial_is_kept_as_written(tiny_bundle: Path, parse: Callable[[str], Any]) -> None:
    bundle = load_bundle(tiny_bundle)
    passage = "The medal was won by U.S. Marine pilots because they were very brave."
    stream = RewordStream(bundle.model, bundle.tokenizer, passage, 3, DecodeConfig(seed=1))
    assert len(stream.spans) == 2  # the sentence splitter cuts after "U.S."
    list(stream)
    assert all(variant.text == passage for variant in stream.variants)  # neither piece is a sentence to reword


def test_bad_requests_are_refused_clearly(tiny_bundle: Path, parse: Callable[[str], Any]) -> None:
    model = Engine().load(tiny_bundle, device="cpu", runtime="torch")
    with pytest.raises(ValueError, match="give the passage to paraphrase"):
        model.stream(request(prompt="   "))
    with pytest.raises(ValueError, match="beam search does not apply"):
        model.stream(GenerationRequest(task="paraphrase", prompt=PASSAGE, beam_width=2))


def test_without_wordnet_a_language_model_only_continues(tiny_bundle: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rewording_module, "rewording_available", lambda: False)
    assert lm_tasks() == ("continue",)
    model = Engine().load(tiny_bundle, device="cpu", runtime="torch")
    assert model.capabilities.tasks == ("continue",)
    with pytest.raises(WordNetMissingError, match="pos"):
        model.stream(request())


def test_preparing_for_paraphrase_loads_the_parser_and_wordnet(tiny_bundle: Path, parse: Callable[[str], Any],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    import engine.rewording.stream as stream_module

    loaded: list[str] = []
    monkeypatch.setattr(stream_module, "english_parser", lambda: loaded.append("parser"))
    monkeypatch.setattr(WordNet, "load", lambda self: loaded.append("wordnet"))
    model = Engine().load(tiny_bundle, device="cpu", runtime="torch")
    model.prepare("continue")
    assert loaded == []
    model.prepare("paraphrase")
    assert loaded == ["parser", "wordnet"]


def test_wordnet_load_reads_every_file(wordnet: WordNet) -> None:
    from engine.rewording import wordnet as wordnet_module

    wordnet.load()
    assert wordnet_module._index.cache_info().currsize >= 4 and wordnet_module._sense_counts.cache_info().currsize >= 1
