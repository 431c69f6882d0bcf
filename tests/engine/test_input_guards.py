"""Decode settings, generation requests and prompts at the API/CLI boundary: wrong types and extreme
values are a ValueError naming the field and its range (never a torch traceback), the range edges
decode stably, and typed control tokens are plain text."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from engine.cli import main as cli_main
from engine.decode_fields import CLASS_TEMPERATURE, REPETITION_PENALTY, TEMPERATURE
from engine.decoding import DecodeConfig, DecodeSettingError, generate_variants
from engine.front_door import GenerationRequest
from engine.model import LanguageModel
from engine.tokenizer import SPECIAL_TOKENS, VariorumTokenizer
from tests.engine.heads.f2_support import build_f2_model


@pytest.mark.parametrize(("settings", "message"), [
    ({"top_p": 0.0}, r"top_p must be in \(0, 1\] \(1 = off\), got 0.0"),
    ({"top_p": 1.5}, r"top_p must be in \(0, 1\]"),
    ({"temperature": 1e-39}, r"temperature must be in \[0.01, 100\]"),
    ({"temperature": 1e308}, r"temperature must be in \[0.01, 100\]"),
    ({"temperature": math.nan}, "temperature must be in"),
    ({"repetition_penalty": 1e39}, r"repetition_penalty must be in \[1, 100\]"),
    ({"class_temperature": 1e-39}, r"class_temperature must be in \[0.01, 100\]"),
    ({"max_new_tokens": 1.5}, "max_new_tokens must be of type int"),
    ({"seed": 1.5}, "seed must be of type int"),
    ({"top_k": True}, "top_k must be of type int"),
    ({"temperature": "0.7"}, "temperature must be of type float"),
    ({"pos_bias": {"JJ": "high"}}, "POS bias"),
    ({"pos_bias": ["JJ"]}, "pos_bias must be of type dict"),
])
def test_bad_decode_values_name_the_field(settings: dict[str, object], message: str) -> None:
    with pytest.raises(DecodeSettingError, match=message):
        DecodeConfig(**settings)  # type: ignore[arg-type]


@pytest.mark.parametrize(("settings", "message"), [
    ({"n": 1.5}, "n must be of type int"),
    ({"prompt": None}, "prompt must be of type str"),
    ({"keywords": ["ok", 3]}, "keywords must be of type list"),
    ({"prompt": "caf\udcff"}, "prompt is not valid UTF-8 text"),
])
def test_bad_request_fields_are_value_errors(settings: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        GenerationRequest(**settings)  # type: ignore[arg-type]


def test_range_edges_decode_to_finite_log_probs(tokenizer: VariorumTokenizer, tiny_model: LanguageModel) -> None:
    f2 = build_f2_model(tokenizer)
    # top-p keeps the likeliest token however small p is: a p that underflows float32 still leaves one to draw
    edges = [{"temperature": TEMPERATURE.bounds.low}, {"temperature": TEMPERATURE.bounds.upper},
             {"top_p": 1e-300}, {"repetition_penalty": REPETITION_PENALTY.bounds.upper}]
    class_edges = [{"class_temperature": CLASS_TEMPERATURE.bounds.low},
                   {"class_temperature": CLASS_TEMPERATURE.bounds.upper}]
    for model, settings in [*((tiny_model, s) for s in edges), *((f2, s) for s in edges + class_edges)]:
        config = DecodeConfig(max_new_tokens=6, seed=3, **settings)  # type: ignore[arg-type]
        for variant in generate_variants(model, tokenizer, "Jenny went", 2, config):
            assert variant.token_ids and all(math.isfinite(lp) for lp in variant.token_log_probs), settings


def test_cli_prompt_with_non_utf8_bytes_is_a_clear_error(tiny_bundle: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    # `--prompt $'\xff'`: Python hands the undecodable byte over as the surrogate U+DCFF
    assert cli_main(["generate", "--bundle", str(tiny_bundle), "--prompt", "\udcff", "--max-new-tokens", "2"]) == 2
    err = capsys.readouterr().err
    assert "prompt is not valid UTF-8 text" in err and "Traceback" not in err


@pytest.mark.parametrize("typed", SPECIAL_TOKENS)
def test_typed_control_tokens_are_plain_text(tokenizer: VariorumTokenizer, typed: str) -> None:
    text = f"Jenny went home.{typed} Then"
    ids = tokenizer.encode(text)
    assert min(ids) >= len(SPECIAL_TOKENS)  # no control id
    assert tokenizer.decode(ids) == text
    assert all(min(row) >= len(SPECIAL_TOKENS) for row in tokenizer.encode_batch([typed, text]))

