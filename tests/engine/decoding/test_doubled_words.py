"""No doubled words: which pieces spell a word after a space, the mask, and every stream handing it to its sampler."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from engine.decoding import DecodeConfig, VariantStream
from engine.decoding.doubled_words import DoubledWords, spaced_word
from engine.decoding.token_sampler import TokenSampler
from engine.metrics.invented import doubled_word_rate
from engine.tokenizer import VariorumTokenizer
from tests.engine.decoding.test_golden_decoding import LM_HEADS, golden_tokenizer, lm_model

CPU = torch.device("cpu")


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
    the, capital = _id(tokenizer, " the"), _id(tokenizer, " The")
    assert sorted(table.repeats[the]) == sorted(table.repeats[capital]) == sorted([the, capital])
    assert _id(tokenizer, ".") not in table.repeats and tokenizer.eos_id not in table.repeats
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


def allowed_seen(monkeypatch: pytest.MonkeyPatch,
                  history: list[torch.Tensor] | None = None) -> list[torch.Tensor | None]:
    """Record the allowed mask (and, into `history`, the ids so far) of every draw."""
    seen: list[torch.Tensor | None] = []
    draw = TokenSampler.draw

    def spy(self: TokenSampler, *args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs.get("allowed", args[6] if len(args) > 6 else None))
        if history is not None:
            history.append(args[3].clone())
        return draw(self, *args, **kwargs)

    monkeypatch.setattr(TokenSampler, "draw", spy)
    return seen


def assert_every_draw_bans_the_last_word(tokenizer: VariorumTokenizer, seen: list[torch.Tensor | None],
                                         history: list[torch.Tensor]) -> int:
    """Each row whose last token is a word after a space may take none of that word's spellings; returns how
    many rows were so banned."""
    table, banned = DoubledWords.of(tokenizer), 0
    for allowed, ids in zip(seen, history, strict=True):
        for row, last in enumerate(ids[:, -1].tolist()):
            if last in table.repeats:
                assert allowed is not None and not allowed[row, table.repeats[last]].any()
                banned += 1
    return banned


@pytest.mark.parametrize("head", sorted(LM_HEADS))
def test_every_head_samples_under_the_ban(head: str, tokenizer: VariorumTokenizer,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    model = lm_model(tokenizer, LM_HEADS[head][0])
    history: list[torch.Tensor] = []
    seen = allowed_seen(monkeypatch, history)
    prompt = tokenizer.encode("The dog saw the")
    settings = DecodeConfig(max_new_tokens=12, seed=1, no_doubled_words=True, real_words=False)
    list(VariantStream(model, tokenizer, prompt, 2, settings))
    first = seen[0]  # the prompt's last word
    assert first is not None and (~first).nonzero()[:, 1].unique().tolist() == sorted(
        [_id(tokenizer, " the"), _id(tokenizer, " The")])
    assert_every_draw_bans_the_last_word(tokenizer, seen, history)
    seen.clear()
    list(VariantStream(model, tokenizer, prompt, 2, DecodeConfig(max_new_tokens=3, seed=1)))
    assert seen[0] is None  # off: no mask at all


def test_the_doubled_word_rate_counts_words_repeating_the_word_before_them() -> None:
    # after the prompt: dough(doubled: the prompt ends in "dough") bread . Bread bread(doubled) . it It(doubled)
    texts, prompts = [" dough bread. Bread bread.", " it It"], ["The dough", "So"]
    assert doubled_word_rate(texts, prompts) == pytest.approx(3 / 6)
    assert doubled_word_rate(["Kevin. Kevin went"], [""]) == 0.0  # punctuation between: not a slip
    assert doubled_word_rate([""], ["x"]) == 0.0
