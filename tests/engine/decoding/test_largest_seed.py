"""The largest base seed a writer may type works for every number of variants: variant i records seed + i."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.cli import main
from engine.controls import MAX_VARIANTS
from engine.decode_fields import MAX_SEED
from engine.decoding import DecodeConfig
from engine.decoding.generate import generate_variants
from engine.model import LanguageModel
from engine.tokenizer import VariorumTokenizer


def test_every_variant_of_the_largest_seed_decodes(tiny_model: LanguageModel, tokenizer: VariorumTokenizer) -> None:
    variants = generate_variants(tiny_model, tokenizer, "Tom", MAX_VARIANTS,
                                 DecodeConfig(max_new_tokens=2, seed=MAX_SEED))
    assert [v.seed for v in variants] == [MAX_SEED + i for i in range(MAX_VARIANTS)]
    assert variants[-1].settings["seed"] == MAX_SEED + MAX_VARIANTS - 1


def test_the_cli_takes_the_documented_largest_seed(tiny_bundle: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["generate", "--bundle", str(tiny_bundle), "-n", "2", "--max-new-tokens", "2", "--seed", str(MAX_SEED)]
    assert main(argv) == 0
    assert f"seed {MAX_SEED + 1}" in capsys.readouterr().out
