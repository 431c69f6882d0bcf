"""Content-words paraphrase models: what they read, how their training sources are made, how they decode."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest
import torch

from engine.config import ConfigError, TrainConfig
from engine.data.paragraphs import ReaderError
from engine.decoding.settings import DecodeConfig
from engine.permgen.config import PermGenConfig
from engine.permgen.content_words import (
    LIGHT_WORDS,
    content_words,
    local_shuffle,
    noisy_content_words,
    paraphrase_source,
)
from engine.permgen.data import DataStats, encode_examples, load_examples
from engine.permgen.model import START_ID, PermGenModel
from engine.permgen.paraphrase import ParaphraseStream
from engine.permgen.paraphrase_readers import both_directions, read_mrpc
from engine.permgen.train import PermGenTrainer
from engine.tokenizer import VariorumTokenizer
from tests.engine.permgen.conftest import FIXTURES, tiny_permgen_config

PROSE = FIXTURES.parent / "tiny_stories.txt"
MRPC = FIXTURES / "paraphrase" / "msr_paraphrase_fixture.txt"


def _config(vocab_size: int) -> PermGenConfig:
    config = tiny_permgen_config(vocab_size)
    config.task, config.lowercase, config.paraphrase_source = "paraphrase", False, "content_words"
    return config


def test_content_words_keep_who_what_tense_negation_and_kind_of_sentence() -> None:
    assert content_words("Tom didn't give the book to Mary, but she took it?") == [
        "Tom", "did", "n't", "give", "book", "Mary", "but", "she", "took", "it", "?"]
    assert content_words("The cat sat on the mat under a tree.") == ["cat", "sat", "mat", "under", "tree"]
    assert content_words("And the.") == content_words("In the end.")[1:] == []


def test_the_source_forms() -> None:
    sentence = "She walked to the store."
    assert paraphrase_source(sentence, "sentence") == "She walked to the store ."
    assert paraphrase_source(sentence, "sentence", lowercase=True) == "she walked to the store ."
    assert paraphrase_source(sentence, "content_words") == "She walked store"
    assert paraphrase_source(sentence, "instruction") == "Paraphrase this sentence : She walked to the store ."
    with pytest.raises(ValueError, match="must be one of"):
        paraphrase_source(sentence, "lemmas")


@pytest.mark.parametrize("distance", [0, 1, 3])
def test_local_shuffle_moves_each_word_at_most_distance_places(distance: int) -> None:
    words = [f"w{i}" for i in range(12)]
    moved = set()
    for seed in range(200):
        shuffled = local_shuffle(words, random.Random(seed), distance)
        assert sorted(shuffled) == sorted(words)
        for new, word in enumerate(shuffled):
            assert abs(new - int(word[1:])) <= distance
            moved.add(new != int(word[1:]))
    assert moved == ({False} if distance == 0 else {False, True})


def test_a_noisy_source_has_the_content_words_and_is_fixed_by_its_seed() -> None:
    sentence = "The old man slowly walked his small brown dog around the quiet park."
    noisy = noisy_content_words(sentence, 7)
    assert Counter(noisy.split()) == Counter(content_words(sentence))
    assert noisy == noisy_content_words(sentence, 7)
    assert len({noisy_content_words(sentence, seed) for seed in range(20)}) > 1


def test_config_checks_the_source_form() -> None:
    with pytest.raises(ConfigError, match="paraphrase_source must be one of"):
        PermGenConfig(task="paraphrase", paraphrase_source="lemmas")
    with pytest.raises(ConfigError, match="is for task 'paraphrase'"):
        PermGenConfig(task="story", paraphrase_source="content_words")
    assert PermGenConfig.from_dict({"task": "paraphrase"}).paraphrase_source == "sentence"  # older bundles


def test_prose_files_are_sentence_pairs_for_a_content_words_model_only() -> None:
    pairs = load_examples([PROSE], DataStats(), task="paraphrase", source_form="content_words")
    assert pairs[0].title == pairs[0].sentences[0] == "Mara found an old key under the porch ."  # case kept
    assert pairs[1].sentences == ("She tried it on every door in the house .",)
    assert both_directions(pairs) == pairs  # a sentence paired with itself is not read twice
    with pytest.raises(ReaderError, match='prose files too when "paraphrase_source" is "content_words"'):
        load_examples([PROSE], DataStats(), task="paraphrase")


def test_training_sources_are_noisy_and_held_out_ones_read_as_when_decoding(
    tmp_path: Path, pg_tokenizer: VariorumTokenizer
) -> None:
    pg_tokenizer.save(tmp_path / "tok")
    train = TrainConfig(train_files=[str(PROSE)], out_dir=str(tmp_path / "run"), batch_size=2, max_steps=1,
                        device="cpu")
    trainer = PermGenTrainer(_config(1), train, [str(MRPC)], tmp_path / "tok")
    prose = load_examples([PROSE], DataStats(), task="paraphrase", source_form="content_words")
    assert len(trainer.train_examples) == len(prose)
    for example, original in zip(trainer.train_examples, prose, strict=True):
        assert example.sentences == original.sentences
        assert Counter(example.title.split()) == Counter(content_words(original.title))
        assert not LIGHT_WORDS & set(example.title.lower().split())
    assert any(e.title != " ".join(content_words(o.title)) for e, o in zip(trainer.train_examples, prose,
                                                                             strict=True))
    valid = read_mrpc(MRPC)
    assert trainer.valid_examples == valid  # untouched: encoding reads their content words in order
    encoded = encode_examples(valid, pg_tokenizer, 64, 48, lowercase=False, task="paraphrase",
                              source_form="content_words")
    assert encoded[0].source == pg_tokenizer.encode(" ".join(content_words(valid[0].title)))


def test_decoding_reads_each_sentences_content_words(pg_tokenizer: VariorumTokenizer) -> None:
    torch.manual_seed(0)
    model = PermGenModel(_config(pg_tokenizer.vocab_size)).eval()
    passage = "The dog ran to the park. And the."
    stream = ParaphraseStream(model, pg_tokenizer, passage, 2, DecodeConfig(seed=1, max_new_tokens=4))
    assert stream.sources_ids[0] == pg_tokenizer.encode("dog ran park")
    assert stream.sources_ids[1] == [START_ID]  # nothing but light words: the model starts from nothing
    events = list(stream)
    assert events and len(stream.candidates) == 2 and all(v.finish_reason for v in stream.candidates)
