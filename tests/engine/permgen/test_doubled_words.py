"""No doubled words in PermGen's sampled sentences: its stream redraws a doubled word like a language model's."""

from __future__ import annotations

import pytest

from engine.decoding.settings import DecodeConfig
from engine.permgen.control import OrderControl
from engine.permgen.decode import PermGenStream
from engine.permgen.model import PermGenModel
from engine.tokenizer import VariorumTokenizer
from tests.engine.decoding.test_doubled_words import doubling_sampler, pairs_doubled


def test_a_sentence_never_writes_a_word_twice_in_a_row(
    pg_model: PermGenModel, pg_tokenizer: VariorumTokenizer, monkeypatch: pytest.MonkeyPatch,
) -> None:
    redraws = doubling_sampler(monkeypatch, pg_tokenizer)
    source = pg_tokenizer.encode("title : the cake")

    def sentences(ban: bool) -> list[list[int]]:
        stream = PermGenStream(pg_model, pg_tokenizer, source, 3, DecodeConfig(seed=2, max_new_tokens=12,
                                                                             no_doubled_words=ban), OrderControl())
        list(stream)
        return [v.token_ids for v in stream.variants]

    assert sum(pairs_doubled(pg_tokenizer, ids) for ids in sentences(ban=False)) > 0
    assert not any(pairs_doubled(pg_tokenizer, ids) for ids in sentences(ban=True)) and redraws
