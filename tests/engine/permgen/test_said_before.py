"""A prose story or abstract on the base writes no run of more than `SAID_BEFORE_RUN[task]` tokens twice, in one
sentence or two, sampled or searched; a paraphrase and a model trained from scratch are left as they were."""

from __future__ import annotations

import pytest
import torch

from engine.decoding.settings import DecodeConfig
from engine.permgen.control import OrderControl
from engine.permgen.decode import FIRST_WORD_ID, SAID_BEFORE_RUN, PermGenStream, PermGenVariant
from engine.permgen.decoder_model import DecoderPermGenModel
from engine.tokenizer import VariorumTokenizer
from tests.engine.permgen.conftest import decode_story, tiny_decoder_config

SOURCE = "Title: The cake\nKeywords: Mia\nStory:"


def _sentences(variant: PermGenVariant) -> list[list[int]]:
    """The variant's sentences as written, in generation order: its tokens split at the marks."""
    sentences: list[list[int]] = [[]]
    for token in variant.token_ids:
        if token < FIRST_WORD_ID:
            sentences.append([])
        else:
            sentences[-1].append(token)
    return [s for s in sentences if s]


def _repeats_a_run(variant: PermGenVariant, run: int = SAID_BEFORE_RUN["story"]) -> bool:
    """Whether any run of `run` + 1 tokens inside the variant's sentences occurs twice."""
    width = run + 1
    runs = [tuple(s[i:i + width]) for s in _sentences(variant) for i in range(len(s) - width + 1)]
    return len(runs) != len(set(runs))


@pytest.mark.parametrize("beam", [False, True])
def test_no_sentence_repeats_a_run_of_an_earlier_one(pg_tokenizer: VariorumTokenizer, beam: bool) -> None:
    torch.manual_seed(0)
    model = DecoderPermGenModel(tiny_decoder_config(pg_tokenizer.vocab_size, text_form="prose")).eval()
    settings, width = DecodeConfig(seed=3, max_new_tokens=10, greedy=not beam), 2 if beam else 1
    unruled = decode_story(model, pg_tokenizer, 2, settings, width, "said")
    assert any(_repeats_a_run(v) for v in unruled)  # what the rule stops: a random model writes "Dddddddd"
    variants = decode_story(model, pg_tokenizer, 2, settings, width)
    assert all(v.order == [2, 3, 1] and len(_sentences(v)) == 3 for v in variants)
    assert not any(_repeats_a_run(v) for v in variants), [v.text for v in variants]


def test_only_prose_stories_and_abstracts_are_held_to_it(pg_tokenizer: VariorumTokenizer,
                                                        pg_decoder: DecoderPermGenModel) -> None:
    source, settings = pg_tokenizer.encode(SOURCE), DecodeConfig(seed=0)
    prose = DecoderPermGenModel(tiny_decoder_config(pg_tokenizer.vocab_size, text_form="prose"))
    paraphraser = DecoderPermGenModel(tiny_decoder_config(pg_tokenizer.vocab_size, text_form="prose",
                                                          task="paraphrase", paraphrase_source="instruction"))
    said = PermGenStream(prose, pg_tokenizer, source, 2, settings, OrderControl(1)).said
    assert said is not None and said[0].limit == SAID_BEFORE_RUN["story"] == 4
    abstract = DecoderPermGenModel(tiny_decoder_config(pg_tokenizer.vocab_size, text_form="prose", task="abstract"))
    said = PermGenStream(abstract, pg_tokenizer, source, 2, settings, OrderControl(1)).said
    assert said is not None and said[0].limit == SAID_BEFORE_RUN["abstract"] == 3  # terms said over in 4 words
    assert PermGenStream(pg_decoder, pg_tokenizer, source, 2, settings, OrderControl(1)).said is None
    assert PermGenStream(paraphraser, pg_tokenizer, source, 2, settings, OrderControl(1)).said is None


def test_the_benchmark_holds_a_task_to_another_run_for_a_while(pg_tokenizer: VariorumTokenizer) -> None:
    from engine.benchmarks.said_before import said_before_run

    source, settings = pg_tokenizer.encode(SOURCE), DecodeConfig(seed=0)
    abstract = DecoderPermGenModel(tiny_decoder_config(pg_tokenizer.vocab_size, text_form="prose", task="abstract"))
    with said_before_run("abstract", 5):
        said = PermGenStream(abstract, pg_tokenizer, source, 1, settings, OrderControl(1)).said
        assert said is not None and said[0].limit == 5
    said = PermGenStream(abstract, pg_tokenizer, source, 1, settings, OrderControl(1)).said
    assert said is not None and said[0].limit == SAID_BEFORE_RUN["abstract"] == 3
