"""With end at a full sentence on, a model that ends text on its own ends it only after a complete sentence."""

from __future__ import annotations

import torch

from engine.decoding import DecodeConfig, generate_variants
from engine.decoding.sentence_end import SENTENCE_END, without_open_ends
from engine.model import LanguageModel
from engine.tokenizer import VariorumTokenizer
from tests.conftest import tiny_config


def _eager_to_end(tokenizer: VariorumTokenizer) -> LanguageModel:
    """NMST with ε = 0.9: p(eos) ≥ 1 − 0.1^t, so left alone nearly every variant ends at its first token."""
    torch.manual_seed(0)
    return LanguageModel(tiny_config(tokenizer.vocab_size, termination="nmst", termination_eps=0.9)).eval()


def test_no_variant_ends_empty_or_mid_sentence(tokenizer: VariorumTokenizer) -> None:
    model = _eager_to_end(tokenizer)
    settings = DecodeConfig(seed=1, max_new_tokens=12, real_words=False, no_doubled_words=False)
    plain = generate_variants(model, tokenizer, "The cat sat down.", 8, settings.replace(end_at_sentence=False))
    assert sum(v.text == "" for v in plain) >= 4  # the model ends at once when it may
    ending = generate_variants(model, tokenizer, "The cat sat down.", 8, settings.replace(end_at_sentence=True))
    for variant in ending:
        assert variant.text.strip(), variant
        if variant.finish_reason == "eos":
            assert SENTENCE_END.search(variant.text), variant.text


def test_the_mask_bans_eos_only_for_open_rows_and_never_leaves_a_row_without_a_token() -> None:
    allowed = torch.ones(3, 5, dtype=torch.bool)
    allowed[2] = torch.tensor([True, False, False, False, False])  # only eos (id 0) left to row 2
    mask = without_open_ends(allowed, ["He ran", "He ran.", ""], 0, 5, torch.device("cpu"))
    assert mask is not None and mask[:, 0].tolist() == [False, True, True] and mask[0, 1:].all()
    assert without_open_ends(None, ["Done!", "“Yes.”"], 0, 5, torch.device("cpu")) is None
