"""No doubled words in PermGen's sampled sentences: its stream hands the ban to the sampler like a language model's."""

from __future__ import annotations

import pytest
import torch

from engine.decoding.settings import DecodeConfig
from engine.permgen.control import OrderControl
from engine.permgen.decode import PermGenStream
from engine.permgen.model import PermGenModel
from engine.tokenizer import VariorumTokenizer
from tests.engine.decoding.test_doubled_words import allowed_seen, assert_every_draw_bans_the_last_word


def test_every_sampled_step_after_a_word_bans_writing_it_again(
    pg_model: PermGenModel, pg_tokenizer: VariorumTokenizer, monkeypatch: pytest.MonkeyPatch,
) -> None:
    history: list[torch.Tensor] = []
    seen = allowed_seen(monkeypatch, history)
    settings = DecodeConfig(seed=2, max_new_tokens=12, no_doubled_words=True)
    stream = PermGenStream(pg_model, pg_tokenizer, pg_tokenizer.encode("title : the cake"), 3, settings,
                           OrderControl())
    list(stream)
    assert assert_every_draw_bans_the_last_word(pg_tokenizer, seen, history) > 0
