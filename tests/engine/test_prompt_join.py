"""A prompt's trailing whitespace: encoded without it, and the variant joins the prompt as typed,
checked with every tokenizer the repo ships (resources/models/*/tokenizer.json)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from engine.bundles.bundle import Bundle
from engine.decoding import DecodeConfig
from engine.front_door import RESOURCES_MODELS, GenerationRequest
from engine.lm.loaded import LanguageLoadedModel
from engine.model import LanguageModel
from engine.prompt_join import fit_after, stream_after_prompt
from engine.tokenizer import VariorumTokenizer
from tests.conftest import tiny_config

SHIPPED = sorted(path.parent for path in RESOURCES_MODELS.glob("*/tokenizer.json"))
PROMPT = "Jenny wanted to learn to bake bread. She went to the store."


@pytest.mark.parametrize("directory", SHIPPED, ids=lambda p: p.name)
def test_trailing_whitespace_is_not_encoded_and_variants_join_as_typed(directory: Path) -> None:
    tokenizer = VariorumTokenizer.load(directory)
    assert tokenizer.encode(PROMPT + " ") != tokenizer.encode(PROMPT)  # the lone-space token this avoids
    torch.manual_seed(0)
    model = LanguageModel(tiny_config(tokenizer.vocab_size)).eval()
    settings = DecodeConfig(max_new_tokens=6, seed=11)
    plain = stream_after_prompt(model, tokenizer, PROMPT, 3, settings)
    plain_deltas = ["", "", ""]
    for event in plain:
        plain_deltas[event.variant] += event.text_delta
    assert [v.text for v in plain.variants] == plain_deltas
    for ending in (" ", "\n", "  \n\n"):
        stream = stream_after_prompt(model, tokenizer, PROMPT + ending, 3, settings)
        assert stream.row_prompts[0] == [tokenizer.eos_id, *tokenizer.encode(PROMPT)]
        deltas = ["", "", ""]
        for event in stream:
            deltas[event.variant] += event.text_delta
        # the same samples as without the whitespace, minus the separator the writer already typed
        assert [v.text for v in stream.variants] == deltas == [t.lstrip() for t in plain_deltas]
        assert [v.token_ids for v in stream.variants] == [v.token_ids for v in plain.variants]


def test_loaded_model_stream_uses_the_trimmed_prompt(tokenizer: VariorumTokenizer, tiny_model: LanguageModel) -> None:
    model = LanguageLoadedModel(Bundle(Path("tiny"), tiny_model, tokenizer, ""), torch.device("cpu"))
    request = GenerationRequest(prompt="Tom went home. ", n=2, decode=DecodeConfig(max_new_tokens=5, seed=3))
    stream = model.stream(request)
    assert stream.row_prompts[0] == [tokenizer.eos_id, *tokenizer.encode("Tom went home.")]
    assert not any(v.text[:1].isspace() for v in model.generate(request))


def test_fit_after_puts_one_separator() -> None:
    assert fit_after("store. ", " She left") == "She left"
    assert fit_after("store.\n", "\nShe left") == "She left"
    assert fit_after("", " Once") == "Once"
    assert fit_after("store.", " She left") == " She left"
    assert fit_after("sto", "re") == "re"
