"""Sentence-based decoding of the decoder-only layout: the one PermGen decoding core over its cached rows follows the
writer's order, always ends, and writes what a recompute of every step without the KV cache writes."""

from __future__ import annotations

import pytest
import torch

from engine.decoding.settings import DecodeConfig
from engine.permgen.beam_decode import BeamPermGenStream
from engine.permgen.control import OrderControl
from engine.permgen.decode import FINISH_EOP, FIRST_WORD_ID, PermGenStream, PermGenVariant
from engine.permgen.decoder_model import DecoderPermGenModel, prefix_ids
from engine.permgen.marks import EOP_ID, begin_id, end_id, split_marked
from engine.permgen.paraphrase import ParaphraseStream
from engine.permgen.rows import DecoderRows, open_rows
from engine.tokenizer import VariorumTokenizer
from tests.engine.permgen.conftest import sentence_states, tiny_decoder_config

SOURCE = "title : the cake keywords : mia , oven"


def _run(model: DecoderPermGenModel, tokenizer: VariorumTokenizer, control: OrderControl, n: int = 3,
         **decode: object) -> list[PermGenVariant]:
    settings = DecodeConfig(seed=5, max_new_tokens=6, **decode)  # type: ignore[arg-type]
    stream = PermGenStream(model, tokenizer, tokenizer.encode(SOURCE), n, settings, control)
    assert len(list(stream)) == sum(len(v.token_ids) for v in stream.candidates)
    return stream.candidates


def test_greedy_decoding_equals_a_recompute_of_every_step_without_the_cache(
    pg_decoder: DecoderPermGenModel, pg_tokenizer: VariorumTokenizer, device: torch.device
) -> None:
    pg_decoder.to(device)
    (variant,) = _run(pg_decoder, pg_tokenizer, OrderControl(num_sentences=3, order=(2, 3, 1)), n=1, greedy=True)
    assert variant.order == [2, 3, 1] and variant.finish_reason == FINISH_EOP
    ids = prefix_ids(pg_tokenizer.encode(SOURCE))
    states = sentence_states(variant.token_ids)
    for token, recorded, (sentence, words) in zip(variant.token_ids, variant.token_log_probs, states, strict=True):
        with torch.no_grad():  # the whole sequence again, no cache
            log_probs = pg_decoder.head.log_probs(pg_decoder.backbone(torch.tensor([ids], device=device))[:, -1])[0]
        assert recorded == pytest.approx(float(log_probs[token]), abs=1e-4)
        if sentence and words < 6:  # inside a sentence below its cap: the best of its words and its end mark
            allowed = torch.full_like(log_probs, float("-inf"))
            allowed[FIRST_WORD_ID:] = log_probs[FIRST_WORD_ID:]
            allowed[end_id(sentence)] = log_probs[end_id(sentence)]
            assert token == int(allowed.argmax())
        elif sentence:
            assert token == end_id(sentence)  # the cap closes it
        ids.append(token)
    assert ids[-1] == EOP_ID


def test_every_decode_follows_the_order_asked_for_and_ends(
    pg_decoder: DecoderPermGenModel, pg_tokenizer: VariorumTokenizer, device: torch.device
) -> None:
    pg_decoder.to(device)
    for control in (OrderControl(num_sentences=4, order=(3, 1, 4, 2)), OrderControl(num_sentences=5, order=(4,)),
                    OrderControl(num_sentences=3), OrderControl()):
        for variant in _run(pg_decoder, pg_tokenizer, control, n=4, top_k=20):
            indices = [t for t, _ in split_marked(variant.token_ids)]  # raises on a repeated index or a stray mark
            assert variant.token_ids[-1] == EOP_ID and variant.finish_reason == FINISH_EOP
            assert all(len(body) <= 6 for _, body in split_marked(variant.token_ids))  # the sentence cap
            if len(control.order) > 1:
                assert indices == list(control.order)
            elif control.order:
                assert indices[0] == control.first
            if control.num_sentences is not None:
                assert sorted(indices) == list(range(1, control.num_sentences + 1))


def test_a_beam_of_one_writes_the_greedy_paragraph(pg_decoder: DecoderPermGenModel,
                                                   pg_tokenizer: VariorumTokenizer) -> None:
    control = OrderControl(num_sentences=3, order=(2, 1, 3))
    (greedy,) = _run(pg_decoder, pg_tokenizer, control, n=1, greedy=True)
    settings = DecodeConfig(seed=5, max_new_tokens=6)
    for width in (1, 3):
        beam = BeamPermGenStream(pg_decoder, pg_tokenizer, pg_tokenizer.encode(SOURCE), 2, settings, control, width)
        list(beam)
        for variant in beam.candidates:  # each sentence rewinds the rows and feeds the chosen one at once
            assert variant.order == [2, 1, 3] and variant.token_ids[-1] == EOP_ID
            assert width > 1 or variant.token_ids == greedy.token_ids


def test_rewinding_and_extending_the_rows_equals_feeding_token_by_token(pg_decoder: DecoderPermGenModel,
                                                                         pg_tokenizer: VariorumTokenizer) -> None:
    tokens = [*pg_tokenizer.encode("mia baked a cake"), end_id(2)]
    with torch.no_grad():
        rows = open_rows(pg_decoder, pg_tokenizer.encode(SOURCE), 1, steps=20)
        assert isinstance(rows, DecoderRows)
        rows.advance(torch.tensor([begin_id(2)]))
        before = rows.snapshot()
        for token in tokens:
            stepped = rows.advance(torch.tensor([token]))
        rows.select(torch.tensor([0, 0, 0]))  # a beam's rows
        rows.rewind(before)
        extended = rows.extend(tokens)
    assert rows.rows == 1 and rows.length == before.length + len(tokens) and int(rows.steps[0]) == 2 + len(tokens)
    assert torch.allclose(extended, stepped, atol=1e-5)


def test_a_paraphrase_keeps_under_its_copy_limit(pg_tokenizer: VariorumTokenizer) -> None:
    torch.manual_seed(1)
    model = DecoderPermGenModel(tiny_decoder_config(pg_tokenizer.vocab_size, task="paraphrase")).eval()
    for beam_width in (1, 3):  # sampled by `PermGenStream`, or one sentence beam
        stream = ParaphraseStream(model, pg_tokenizer, "mia baked a cake for her mother .", 3,
                                  DecodeConfig(seed=2, copy_limit=2, top_k=5), beam_width)
        list(stream)
        source = stream.sources_ids[0]
        runs = {tuple(source[i : i + 3]) for i in range(len(source) - 2)}
        for variant in stream.candidates:
            written = variant.token_ids  # the words of the one sentence
            assert variant.finish_reason == "done" and written
            assert not any(tuple(written[i : i + 3]) in runs for i in range(len(written) - 2))
