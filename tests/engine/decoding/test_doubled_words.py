"""No doubled words: which pieces spell a word after a space, the mask, the redraw in every stream, and the rate."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from engine.decoding import DecodeConfig, VariantStream
from engine.decoding.doubled_words import REDRAW_STEP, DoubledWords, spaced_word
from engine.decoding.token_sampler import Draw, TokenSampler
from engine.metrics.invented import doubled_word_rate
from engine.tokenizer import VariorumTokenizer
from tests.engine.decoding.test_golden_decoding import LM_HEADS, golden_tokenizer, lm_model

CPU = torch.device("cpu")
PROMPT = "The dog saw the"


@pytest.fixture(scope="module")
def tokenizer() -> VariorumTokenizer:
    return golden_tokenizer()


def _id(tokenizer: VariorumTokenizer, piece: str) -> int:
    ids = tokenizer.encode(piece)
    assert len(ids) == 1, f"{piece!r} is not one piece of the fixture tokenizer"
    return ids[0]


def test_a_spaced_word_is_one_space_and_letters_only() -> None:
    assert spaced_word(" Dough") == "dough"
    assert [spaced_word(p) for p in ("dough", " it's", " 42", "  the", " ", ".")] == [""] * 6


def test_the_table_gives_each_word_piece_its_spellings_in_any_case(tokenizer: VariorumTokenizer) -> None:
    table = DoubledWords(tokenizer)
    the, capital, dot = _id(tokenizer, " the"), _id(tokenizer, " The"), _id(tokenizer, ".")
    assert sorted(table.repeats[the]) == sorted(table.repeats[capital]) == sorted([the, capital])
    assert dot not in table.repeats and tokenizer.eos_id not in table.repeats
    last, drawn = torch.tensor([the, the, dot, the, dot]), torch.tensor([capital, dot, dot, the, the])
    assert table.doubled(last, drawn).tolist() == [True, False, False, True, False]
    assert DoubledWords.of(tokenizer) is DoubledWords.of(tokenizer)  # built once per tokenizer


def test_the_mask_clears_only_the_last_words_spellings_and_leaves_its_input(tokenizer: VariorumTokenizer) -> None:
    table = DoubledWords(tokenizer)
    the, capital, dot = _id(tokenizer, " the"), _id(tokenizer, " The"), _id(tokenizer, ".")
    allowed = torch.ones(2, tokenizer.vocab_size, dtype=torch.bool)
    allowed[1, 5] = False
    masked = table.mask(allowed, [the, dot], CPU)
    assert masked is not None and allowed.all(dim=1).tolist() == [True, False]  # the input is untouched
    assert (~masked[0]).nonzero().flatten().tolist() == sorted([the, capital])
    assert torch.equal(masked[1], allowed[1])
    assert table.mask(allowed, [dot, dot], CPU) is allowed  # nothing to ban: the same mask
    fresh = table.mask(None, [dot, capital], CPU)
    assert fresh is not None and fresh[0].all() and (~fresh[1]).sum() == 2


def doubling_sampler(monkeypatch: pytest.MonkeyPatch, tokenizer: VariorumTokenizer) -> list[torch.Tensor | None]:
    """Make every first draw write the row's last token again where that is a word after a space (a model that
    always doubles); redraws (step ≥ REDRAW_STEP) draw as usual. Returns the redraws' allowed masks."""
    table, redraws = DoubledWords.of(tokenizer), []
    draw = TokenSampler.draw

    def doubling(self: TokenSampler, hidden: torch.Tensor, steps: torch.Tensor, state: Any, history: torch.Tensor,
                 seeds: torch.Tensor, step: int, allowed: torch.Tensor | None = None,
                 guide: torch.Tensor | None = None) -> Draw:
        drawn = draw(self, hidden, steps, state, history, seeds, step, allowed, guide)
        if step >= REDRAW_STEP:
            redraws.append(allowed)
            return drawn
        last = history[:, -1]
        spaced = torch.tensor([t in table.repeats for t in last.tolist()])
        return Draw(torch.where(spaced, last, drawn.tokens), drawn.groups, drawn.marginal)

    monkeypatch.setattr(TokenSampler, "draw", doubling)
    return redraws


def pairs_doubled(tokenizer: VariorumTokenizer, ids: list[int]) -> int:
    pairs = torch.tensor(ids)
    return int(DoubledWords.of(tokenizer).doubled(pairs[:-1], pairs[1:]).sum())


@pytest.mark.parametrize("head", sorted(LM_HEADS))
def test_every_head_redraws_a_doubled_word(head: str, tokenizer: VariorumTokenizer,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    model = lm_model(tokenizer, LM_HEADS[head][0])
    redraws = doubling_sampler(monkeypatch, tokenizer)
    prompt = tokenizer.encode(PROMPT)

    def written(ban: bool) -> list[list[int]]:
        settings = DecodeConfig(max_new_tokens=12, seed=1, no_doubled_words=ban)
        stream = VariantStream(model, tokenizer, prompt, 3, settings)
        list(stream)
        return [[prompt[-1], *v.token_ids] for v in stream.variants]

    assert all(pairs_doubled(tokenizer, ids) > 0 for ids in written(ban=False))  # the doubling model doubles
    assert not redraws
    assert not any(pairs_doubled(tokenizer, ids) for ids in written(ban=True))
    the, capital = _id(tokenizer, " the"), _id(tokenizer, " The")
    first = redraws[0]  # all rows end in " the": each redraws without its spellings
    assert first is not None and (~first).nonzero()[:, 1].unique().tolist() == sorted([the, capital])


@pytest.mark.parametrize("head", sorted(LM_HEADS))
def test_a_seed_writes_the_same_text_until_it_would_double(head: str, tokenizer: VariorumTokenizer) -> None:
    model = lm_model(tokenizer, LM_HEADS[head][0])
    prompt = tokenizer.encode(PROMPT)
    table = DoubledWords.of(tokenizer)
    for ban in (False, True):
        streams = []
        for setting in (False, ban):
            stream = VariantStream(model, tokenizer, prompt, 6, DecodeConfig(max_new_tokens=30, seed=4,
                                                                             no_doubled_words=setting))
            list(stream)
            streams.append([v.token_ids for v in stream.variants])
        for plain, banned in zip(*streams, strict=True):
            ids = [prompt[-1], *plain]
            pairs = torch.tensor(ids)
            doubles = table.doubled(pairs[:-1], pairs[1:]).tolist()
            first_double = next((i for i, d in enumerate(doubles) if d), len(plain))
            assert banned[:first_double] == plain[:first_double]
            assert banned == plain or first_double < len(plain)


def test_the_doubled_word_rate_counts_words_repeating_the_word_before_them() -> None:
    # after the prompt: dough(doubled: the prompt ends in "dough") bread . Bread bread(doubled) . it It(doubled)
    texts, prompts = [" dough bread. Bread bread.", " it It"], ["The dough", "So"]
    assert doubled_word_rate(texts, prompts) == pytest.approx(3 / 6)
    assert doubled_word_rate(["Kevin. Kevin went"], [""]) == 0.0  # punctuation between: not a slip
    assert doubled_word_rate([""], ["x"]) == 0.0
