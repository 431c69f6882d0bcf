"""Sentence-based decoding: order control, reordering, termination, Eq. 8 ranking, two-stage heads."""

from __future__ import annotations

import pytest
import torch

from engine.decoding.settings import DecodeConfig
from engine.decoding.step import DecodeRows
from engine.decoding.text_cleanup import drop_control_characters
from engine.decoding.token_sampler import TokenSampler
from engine.heads.posg import POSGHead
from engine.permgen.beam_decode import BeamPermGenStream
from engine.permgen.control import OrderControl
from engine.permgen.decode import FINISH_EOP, PermGenStream, PermGenVariant, first_marks, rank_variants
from engine.permgen.marks import EOP_ID, begin_id, end_id, natural_order, split_marked
from engine.permgen.model import PermGenModel
from engine.permgen.runner import TorchSeq2SeqCache, TorchSeq2SeqRunner
from engine.tokenizer import VariorumTokenizer
from tests.engine.permgen.conftest import tiny_permgen_config


def run(model: PermGenModel, tok: VariorumTokenizer, control: OrderControl, n: int = 3,
        **decode: object) -> list[PermGenVariant]:
    settings = DecodeConfig(seed=11, max_new_tokens=6, **decode)  # type: ignore[arg-type]
    stream = PermGenStream(model, tok, tok.encode("title : the cake keywords : mia"), n, settings, control)
    events = list(stream)
    assert len(events) == sum(len(v.token_ids) for v in stream.candidates)
    return stream.candidates


def test_full_user_order_is_followed_and_reordered(pg_model: PermGenModel, pg_tokenizer: VariorumTokenizer) -> None:
    for v in run(pg_model, pg_tokenizer, OrderControl(num_sentences=4, order=(3, 1, 4, 2))):
        pieces = split_marked(v.token_ids)
        assert [t for t, _ in pieces] == [3, 1, 4, 2] == v.order
        assert v.finish_reason == FINISH_EOP and v.token_ids[-1] == EOP_ID
        assert sorted(v.sentences) == [1, 2, 3, 4]
        bodies = natural_order(pieces)  # reordered by index
        kept = [drop_control_characters(pg_tokenizer.decode(b), keep_word_boundaries=True).strip()
                for b in bodies]  # as generated text is
        assert kept == [v.sentences[t] for t in (1, 2, 3, 4)]


def test_model_choice_never_repeats_exceeds_or_fails_to_end(
    pg_model: PermGenModel, pg_tokenizer: VariorumTokenizer
) -> None:
    for control in (OrderControl(num_sentences=3), OrderControl(), OrderControl(num_sentences=5, order=(4,))):
        for v in run(pg_model, pg_tokenizer, control, n=4, top_k=20):
            indices = [t for t, _ in split_marked(v.token_ids)]  # raises on a repeated index or a bad mark
            assert len(indices) == len(set(indices)) and all(1 <= t <= control.limit for t in indices)
            if control.num_sentences is not None:
                assert sorted(indices) == list(range(1, control.limit + 1))  # exactly the requested count
            if control.first:
                assert indices[0] == control.first
            assert v.token_ids[-1] == EOP_ID
            assert all(len(body) <= 6 for _, body in split_marked(v.token_ids))  # per-sentence cap


def test_candidates_start_at_different_sentences(pg_model: PermGenModel, pg_tokenizer: VariorumTokenizer) -> None:
    starts = [v.order[0] for v in run(pg_model, pg_tokenizer, OrderControl(num_sentences=5), n=5)]
    assert sorted(starts) == [1, 2, 3, 4, 5]  # sampling without replacement over 5 indices
    log_probs = torch.zeros(400)
    log_probs[begin_id(2)] = 5.0
    picks = first_marks(log_probs, OrderControl(num_sentences=3), 7, seed=0)
    assert sorted(picks[:3]) == [1, 2, 3] and sorted(picks[3:6]) == [1, 2, 3]  # rounds of 3
    assert first_marks(log_probs, OrderControl(num_sentences=3, distinct_starts=False), 2, 0) == [2, 2]


def test_rank_is_eq8_mean_token_log_prob() -> None:
    a = PermGenVariant(index=0, seed=0, settings={}, token_log_probs=[-1.0, -3.0])  # mean -2
    b = PermGenVariant(index=1, seed=1, settings={}, token_log_probs=[-0.5, -1.0, -3.0])  # mean -1.5
    c = PermGenVariant(index=2, seed=2, settings={}, token_log_probs=[-4.0])  # mean -4 (best sum -4 > -4.5)
    rank_variants([a, b, c])
    assert (a.score, b.score, c.score) == (-2.0, -1.5, -4.0)
    assert (b.rank, a.rank, c.rank) == (1, 2, 3)


def test_greedy_decoding_is_reproducible_and_cancellation_stops(
    pg_model: PermGenModel, pg_tokenizer: VariorumTokenizer
) -> None:
    first = run(pg_model, pg_tokenizer, OrderControl(num_sentences=2, order=(2, 1)), n=2, greedy=True)
    again = run(pg_model, pg_tokenizer, OrderControl(num_sentences=2, order=(2, 1)), n=2, greedy=True)
    assert [v.token_ids for v in first] == [v.token_ids for v in again]
    calls = iter(range(100))
    stream = PermGenStream(pg_model, pg_tokenizer, pg_tokenizer.encode("title : x"), 2, DecodeConfig(seed=0),
                           OrderControl(num_sentences=3), should_stop=lambda: next(calls) >= 3)
    list(stream)
    assert all(v.finish_reason == "cancelled" and len(v.token_ids) == 3 for v in stream.candidates)


def test_sampling_stays_inside_the_allowed_set_with_a_two_stage_head() -> None:
    torch.manual_seed(0)
    vocab, tags = 40, ["NN", "VB", "SPECIAL"]
    head = POSGHead(vocab, 8, tags)
    membership = torch.zeros(3, vocab, dtype=torch.bool)
    membership[0, 30:40] = membership[1, 25:35] = True  # overlapping POS groups
    membership[2, :25] = True  # specials and marks
    head.membership.copy_(membership)
    allowed = torch.zeros(4, vocab, dtype=torch.bool)
    allowed[:, 32:] = True
    allowed[:, end_id(1)] = True
    seeds = torch.arange(4)
    hidden, steps, history = torch.randn(4, 8), torch.ones(4, dtype=torch.long), torch.zeros(4, 1, dtype=torch.long)
    sampler = TokenSampler(head, DecodeConfig())
    for step in range(30):
        draw = sampler.draw(hidden, steps, None, history, seeds, step, allowed)
        tokens, groups = draw.tokens, draw.groups
        assert bool(allowed.gather(1, tokens[:, None]).all())
        assert bool(membership[groups, tokens].all())  # each token comes from its drawn group


def test_decoding_with_a_posg_head_ends_properly(pg_tokenizer: VariorumTokenizer) -> None:
    torch.manual_seed(0)
    config = tiny_permgen_config(pg_tokenizer.vocab_size, head="posg", pos_tags=["NN", "VB", "SPECIAL"])
    model = PermGenModel(config).eval()
    membership = torch.zeros(3, pg_tokenizer.vocab_size, dtype=torch.bool)
    membership[0, 23::2] = membership[1, 24::2] = True
    membership[2, :23] = True
    assert isinstance(model.head, POSGHead)
    model.head.membership.copy_(membership)
    for v in run(model, pg_tokenizer, OrderControl(num_sentences=3), n=2, pos_top_k=2):
        assert sorted(t for t, _ in split_marked(v.token_ids)) == [1, 2, 3]


def test_bad_requests_fail_before_decoding(pg_model: PermGenModel, pg_tokenizer: VariorumTokenizer) -> None:
    with pytest.raises(ValueError, match="source"):
        PermGenStream(pg_model, pg_tokenizer, [], 2, DecodeConfig(), OrderControl())
    with pytest.raises(ValueError, match="variants"):
        PermGenStream(pg_model, pg_tokenizer, [40], 0, DecodeConfig(), OrderControl())


class RowCountingRunner(TorchSeq2SeqRunner):
    """The torch runner, noting how many rows each decoder call runs."""

    def __init__(self, model: PermGenModel) -> None:
        super().__init__(model.backbone)
        self.rows: list[int] = []

    def decode(self, ids: torch.Tensor, sentence: torch.Tensor, local: torch.Tensor,
               cache: TorchSeq2SeqCache) -> torch.Tensor:
        self.rows.append(int(ids.shape[0]))
        return super().decode(ids, sentence, local, cache)


def test_ended_candidates_leave_the_batch_and_the_rest_decode_as_alone(pg_tokenizer: VariorumTokenizer) -> None:
    torch.manual_seed(0)
    pg_model = PermGenModel(tiny_permgen_config(pg_tokenizer.vocab_size)).eval()
    with torch.no_grad():  # sentence ends likely enough that candidates write different lengths
        for sentence in range(1, 5):
            pg_model.head.proj.weight[end_id(sentence)] *= 30
    control = OrderControl(num_sentences=4, order=(2,))  # every candidate starts at sentence 2, as one alone does
    settings = DecodeConfig(seed=11, max_new_tokens=6, top_k=20, repetition_penalty=1.2)
    source = pg_tokenizer.encode("title : the cake keywords : mia")
    runner = RowCountingRunner(pg_model)
    stream = PermGenStream(pg_model, pg_tokenizer, source, 4, settings, control, runner=runner)
    streamed = [0] * 4
    for event in stream:
        streamed[event.variant] += 1
    lengths = [len(v.token_ids) for v in stream.candidates]
    assert len(set(lengths)) >= 3 and streamed == lengths
    # after the start token, one decoder call per step, of the candidates that have not written ⟨EOP⟩ yet
    assert runner.rows[1:] == [sum(length > step for length in lengths) for step in range(1, max(lengths))]
    for variant in stream.candidates:
        alone = PermGenStream(pg_model, pg_tokenizer, source, 1, settings.with_seed(variant.seed), control)
        list(alone)
        assert alone.candidates[0].token_ids == variant.token_ids
        assert alone.candidates[0].sentences == variant.sentences
        assert alone.candidates[0].token_log_probs == pytest.approx(variant.token_log_probs, abs=1e-5)


def test_ended_candidates_that_stay_in_the_batch_as_on_a_gpu_write_the_same_paragraphs(
    pg_tokenizer: VariorumTokenizer, monkeypatch: pytest.MonkeyPatch
) -> None:
    torch.manual_seed(0)
    pg_model = PermGenModel(tiny_permgen_config(pg_tokenizer.vocab_size)).eval()
    with torch.no_grad():  # sentence ends likely enough that candidates write different lengths
        for sentence in range(1, 5):
            pg_model.head.proj.weight[end_id(sentence)] *= 30
    settings = DecodeConfig(seed=11, max_new_tokens=6, top_k=20, repetition_penalty=1.2)
    source = pg_tokenizer.encode("title : the cake keywords : mia")

    def paragraphs() -> list[PermGenVariant]:
        stream = PermGenStream(pg_model, pg_tokenizer, source, 4, settings, OrderControl(num_sentences=4))
        list(stream)
        return stream.candidates

    dropped = paragraphs()
    monkeypatch.setattr(DecodeRows, "drop_ended", lambda self, active: None)  # a GPU keeps every row
    kept = paragraphs()
    assert len({len(v.token_ids) for v in dropped}) >= 3
    for a, b in zip(dropped, kept, strict=True):
        assert (a.token_ids, a.token_groups, a.text, a.rank) == (b.token_ids, b.token_groups, b.text, b.rank)
        assert a.token_log_probs == pytest.approx(b.token_log_probs, abs=1e-5)


@pytest.mark.parametrize("beam", [1, 2])
def test_a_sentence_has_a_word_before_its_end_even_when_the_model_would_end_it_at_once(
    pg_model: PermGenModel, pg_tokenizer: VariorumTokenizer, beam: int
) -> None:
    word = pg_tokenizer.encode(" cake")[0]
    ends = [end_id(t) for t in range(1, 5)]
    with torch.no_grad():  # a constant decoder output: every step prefers ⟨E-t⟩ to the one word
        norm = pg_model.backbone.decoder.layers[-1].final_layer_norm
        norm.weight.zero_()
        norm.bias.copy_(torch.nn.functional.one_hot(torch.tensor(0), norm.bias.numel()).float())
        pg_model.head.proj.weight.zero_()
        pg_model.head.proj.weight[[word, *(begin_id(t) for t in range(1, 5)), EOP_ID], 0] = 20.0
        pg_model.head.proj.weight[ends, 0] = 25.0
    settings = DecodeConfig(seed=1, max_new_tokens=6, greedy=True)
    source = pg_tokenizer.encode("title : the cake keywords : mia")
    control = OrderControl(num_sentences=3, order=(2, 3, 1))
    stream = (PermGenStream(pg_model, pg_tokenizer, source, 2, settings, control) if beam == 1 else
              BeamPermGenStream(pg_model, pg_tokenizer, source, 2, settings, control, beam))
    list(stream)
    for variant in stream.candidates:
        assert [(t, body) for t, body in split_marked(variant.token_ids)] == [(2, [word]), (3, [word]), (1, [word])]
