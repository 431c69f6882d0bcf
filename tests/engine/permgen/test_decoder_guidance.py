"""Guidance on PermGen models: the twin rows read the source of no text, a decoder-only model's sentence follows the
guided distribution, the encoder-decoder is guided too, a paraphrase's twin reads no sentence, and guidance is refused
without that source and in the sentence beam."""

from __future__ import annotations

import pytest
import torch

from engine.decoding.settings import DecodeConfig
from engine.permgen.beam_decode import BeamPermGenStream
from engine.permgen.control import OrderControl
from engine.permgen.decode import FINISH_EOP, FIRST_WORD_ID, PermGenStream
from engine.permgen.decoder_model import DecoderPermGenModel, prefix_ids
from engine.permgen.marks import begin_id, end_id
from engine.permgen.model import START_ID, PermGenModel
from engine.permgen.paraphrase import ParaphraseStream
from engine.tokenizer import VariorumTokenizer
from tests.engine.decoding.test_guidance import guided_recompute
from tests.engine.permgen.conftest import sentence_states, tiny_decoder_config

SOURCE = "title : the cake keywords : mia , oven"
NO_TEXT = "title : keywords :"
GUIDANCE = 4.0


def test_a_guided_permgen_sentence_follows_the_guided_distribution_after_no_title(
    pg_decoder: DecoderPermGenModel, pg_tokenizer: VariorumTokenizer
) -> None:
    source, no_text = pg_tokenizer.encode(SOURCE), pg_tokenizer.encode(NO_TEXT)
    settings = DecodeConfig(seed=5, max_new_tokens=10, greedy=True, guidance=GUIDANCE)
    control = OrderControl(num_sentences=3, order=(2, 3, 1))
    stream = PermGenStream(pg_decoder, pg_tokenizer, source, 1, settings, control, unconditioned_ids=no_text)
    list(stream)
    (variant,) = stream.candidates
    assert variant.order == [2, 3, 1]
    targets: list[int] = []
    moved, states = 0, sentence_states(variant.token_ids)
    for token, recorded, (sentence, words) in zip(variant.token_ids, variant.token_log_probs, states, strict=True):
        if sentence and words < 10:  # a sentence's words and its end mark: the best under guidance
            conditioned, guided = guided_recompute(pg_decoder, prefix_ids(source) + targets,
                                                 prefix_ids(no_text) + targets, GUIDANCE)
            allowed = torch.full_like(guided, float("-inf"))
            allowed[FIRST_WORD_ID:] = guided[FIRST_WORD_ID:]
            if words:
                allowed[end_id(sentence)] = guided[end_id(sentence)]
            assert token == int(allowed.argmax())
            moved += token != int(conditioned[FIRST_WORD_ID:].argmax()) + FIRST_WORD_ID
            assert recorded == pytest.approx(float(conditioned[token]), abs=1e-4)  # Eq. 8 scores the model's own
        targets.append(token)
    assert moved  # some words are not the model's own likeliest: guidance acted


def test_guidance_needs_a_source_of_no_text_and_a_sampled_paragraph(
    pg_decoder: DecoderPermGenModel, pg_tokenizer: VariorumTokenizer
) -> None:
    source, settings = pg_tokenizer.encode(SOURCE), DecodeConfig(seed=5, max_new_tokens=6, guidance=2.0)
    with pytest.raises(ValueError, match="guidance needs this story's source of no text"):
        PermGenStream(pg_decoder, pg_tokenizer, source, 2, settings, OrderControl())
    with pytest.raises(ValueError, match="the sentence beam keeps the model's own likeliest sentences"):
        BeamPermGenStream(pg_decoder, pg_tokenizer, source, 2, settings, OrderControl(), 3)


def test_the_encoder_decoder_layout_is_guided_by_its_empty_source_too(
    pg_model: PermGenModel, pg_tokenizer: VariorumTokenizer
) -> None:
    source, no_text = pg_tokenizer.encode(SOURCE), pg_tokenizer.encode(NO_TEXT)
    control = OrderControl(num_sentences=3, order=(3, 1, 2))
    runs = []
    for guidance in (1.0, GUIDANCE):
        stream = PermGenStream(pg_model, pg_tokenizer, source, 3, DecodeConfig(seed=5, max_new_tokens=8,
                                                                               guidance=guidance), control,
                               unconditioned_ids=no_text)
        list(stream)
        assert all(v.order == [3, 1, 2] and v.finish_reason == FINISH_EOP for v in stream.candidates)
        assert (stream.twin is not None) == (guidance != 1.0)
        runs.append([v.token_ids for v in stream.candidates])
    assert runs[0] != runs[1]  # the same seeds write other words under guidance


def test_a_guided_paraphrase_follows_the_guided_distribution_after_no_sentence(
    pg_tokenizer: VariorumTokenizer
) -> None:
    torch.manual_seed(0)
    model = DecoderPermGenModel(tiny_decoder_config(pg_tokenizer.vocab_size, task="paraphrase")).eval()
    sentence = "tom baked a cake ."
    no_sentence = [START_ID]  # an empty sentence encodes to nothing: the twin reads the start id alone
    settings = DecodeConfig(seed=5, max_new_tokens=10, greedy=True, guidance=GUIDANCE)
    stream = ParaphraseStream(model, pg_tokenizer, sentence, 1, settings, unconditioned_ids=no_sentence)
    list(stream)
    words = stream.candidates[0].token_ids  # the words only: the stream leaves out the forced marks
    assert words
    targets, moved = [begin_id(1)], 0
    for k, token in enumerate([*words, end_id(1)]):
        conditioned, guided = guided_recompute(model, prefix_ids(stream.sources_ids[0]) + targets,
                                               prefix_ids(no_sentence) + targets, GUIDANCE)
        allowed = torch.full_like(guided, float("-inf"))
        allowed[FIRST_WORD_ID:] = guided[FIRST_WORD_ID:]
        if k:
            allowed[end_id(1)] = guided[end_id(1)]
        if k < 10:  # past the cap only the end mark may come
            assert token == int(allowed.argmax())
        moved += token != int(conditioned[FIRST_WORD_ID:].argmax()) + FIRST_WORD_ID
        targets.append(token)
    assert moved  # guidance chose some word the model alone would not
    with pytest.raises(ValueError, match="guidance needs this paraphrase's source of no text"):
        list(ParaphraseStream(model, pg_tokenizer, sentence, 1, settings))
    with pytest.raises(ValueError, match="the sentence beam keeps the model's own likeliest sentences"):
        ParaphraseStream(model, pg_tokenizer, sentence, 1, settings, beam_width=2, unconditioned_ids=no_sentence)
