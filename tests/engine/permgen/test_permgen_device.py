"""PermGen decoding on each device (`device` fixture): the seeded first-mark draw and the sentence loop."""

from __future__ import annotations

import torch

from engine.decoding.settings import DecodeConfig
from engine.permgen.control import OrderControl
from engine.permgen.decode import PermGenStream, first_marks
from engine.permgen.model import PermGenModel
from engine.tokenizer import VariorumTokenizer
from tests.engine.permgen.conftest import tiny_permgen_config


def test_permgen_first_marks_and_decoding_run_on_the_device(device: torch.device,
                                                           pg_tokenizer: VariorumTokenizer) -> None:
    torch.manual_seed(0)
    model = PermGenModel(tiny_permgen_config(pg_tokenizer.vocab_size)).eval().to(device)
    control = OrderControl(num_sentences=3)  # the model picks distinct first sentences (a seeded draw)
    firsts = first_marks(torch.randn(pg_tokenizer.vocab_size, device=device), control, 3, seed=5)
    assert sorted(firsts) == [1, 2, 3]
    stream = PermGenStream(model, pg_tokenizer, pg_tokenizer.encode("title : cake"), 3,
                           DecodeConfig(seed=2, max_new_tokens=4), control)
    list(stream)
    assert all(v.finish_reason for v in stream.variants)
