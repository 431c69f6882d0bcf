"""Fuzz suite: bad and extreme inputs at every engine boundary (decode settings, generation requests,
bundle configs and weights, prompts, JSONL corpora, training configs, the generate command line).

Hypothesis runs derandomized (a fixed seed) with a bounded number of examples, so the suite is
repeatable and takes seconds. Every input must be handled (see tests/engine/fuzz_support.py);
the counts are printed at the end of the module: `fuzz: tried N, handled N, failed N`.
"""

from __future__ import annotations

import dataclasses
import json
import math
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from safetensors.torch import load_file, save_file

from engine.bundles.bundle import BundleError, load_bundle
from engine.cli import main as cli_main
from engine.config import ConfigError, ModelConfig, TrainConfig
from engine.data.corpus import CorpusError, read_jsonl
from engine.decoding import DecodeConfig, generate_variants
from engine.front_door import GenerationRequest
from engine.permgen.bundle import load_permgen_bundle
from engine.tokenizer import SPECIAL_TOKENS
from tests.engine.fuzz_support import (
    WRONG_TYPES,
    bundle_copy,
    floats,
    ints,
    models,
    names_one_of,
    print_tally,  # noqa: F401  # a module-scoped autouse fixture: prints the tally
    record,
    saved_bundles,
    tokenizer,
)

FUZZ = settings(derandomize=True, deadline=None, database=None, suppress_health_check=list(HealthCheck))

DECODE_FIELDS = [f.name for f in dataclasses.fields(DecodeConfig)]
MODEL_FIELDS = [f.name for f in dataclasses.fields(ModelConfig)]
TRAIN_FIELDS = [f.name for f in dataclasses.fields(TrainConfig)]


def _decode_values() -> st.SearchStrategy[dict[str, Any]]:
    pools: dict[str, st.SearchStrategy[object]] = {
        "max_new_tokens": ints(), "temperature": floats(), "top_k": ints(), "top_p": floats(),
        "repetition_penalty": floats(), "greedy": st.booleans() | st.sampled_from([1, "yes"]),
        "seed": ints(), "class_temperature": floats(), "class_top_k": ints(), "class_rarity_bias": floats(),
        "flat_sampling": st.booleans(), "pos_top_k": ints(),
        "pos_bias": st.dictionaries(st.sampled_from(["JJ", "adjectives", "XX", ""]), floats(), max_size=2)
        | st.sampled_from(WRONG_TYPES),
    }
    return st.fixed_dictionaries({}, optional=pools)


@given(values=_decode_values(), f2=st.booleans())
@settings(FUZZ, max_examples=60)
def test_decode_config_and_generation(values: dict[str, Any], f2: bool) -> None:
    """Any settings either decode to finite log-probs on a tiny softmax / F² model or are refused naming a field."""

    def run() -> None:
        config = DecodeConfig(**values)
        model = models()[1 if f2 else 0]
        short = dataclasses.replace(config, max_new_tokens=min(config.max_new_tokens, 3))
        for variant in generate_variants(model, tokenizer(), "Jenny went", 2, short):
            assert all(math.isfinite(lp) for lp in variant.token_log_probs)

    record("decode", run, lambda e: isinstance(e, ValueError) and names_one_of(e, [*DECODE_FIELDS, "POS bias"]))


@given(values=st.fixed_dictionaries({}, optional={
    "prompt": st.text(max_size=20) | st.sampled_from([None, 3, "caf\udcff", "\ud800"]),
    "n": ints(), "task": st.sampled_from(["continue", "story", "nope", 3]), "title": st.text(max_size=5),
    "keywords": st.lists(st.text(max_size=5) | st.integers(), max_size=3), "beam_width": ints(),
    "num_sentences": ints(), "sentence_order": st.none() | st.lists(ints(), max_size=3),
}))
@settings(FUZZ, max_examples=100)
def test_generation_request(values: dict[str, Any]) -> None:
    fields = [f.name for f in dataclasses.fields(GenerationRequest)] + ["number of variants", "beam width",
                                                                         "sentence", "order"]
    record("request", lambda: GenerationRequest(**values),
           lambda e: isinstance(e, ValueError) and names_one_of(e, fields))


_MODEL_EDITS = st.dictionaries(st.sampled_from(["vocab_size", "n_layer", "n_head", "n_embd", "block_size",
                                                "dropout", "head", "tie_embeddings", "termination", "f2_classes",
                                                "pos_tags", "unknown_field"]),
                               ints() | floats() | st.sampled_from(["f2", "posg", "softmax", "nmst", ["a"]]),
                               min_size=1, max_size=3)


@given(edits=_MODEL_EDITS, kind=st.sampled_from(["lm", "permgen"]))
@settings(FUZZ, max_examples=60)
def test_bundle_config(edits: dict[str, object], kind: str) -> None:
    """A config.json with edited model fields loads or is a BundleError naming the field (or the weights)."""

    def run() -> None:
        with bundle_copy(kind) as bundle:
            config = json.loads((bundle / "config.json").read_text())
            config["model"].update(edits)
            (bundle / "config.json").write_text(json.dumps(config))
            (load_bundle if kind == "lm" else load_permgen_bundle)(bundle)

    record("bundle-config", run, lambda e: isinstance(e, BundleError) and names_one_of(
        e, [*MODEL_FIELDS, "unknown field", "weight", "PermGen", "head", "tokenizer"]))


# float16/bfloat16 are not damage: bundles store them to halve their size (tests/engine/permgen/test_stored_weights.py)
_WEIGHT_EDITS = st.sampled_from(["nan", "inf", "int32", "float64", "transpose", "drop", "extra", "empty"])


@given(edit=_WEIGHT_EDITS, which=st.integers(0, 1000), kind=st.sampled_from(["lm", "permgen"]))
@settings(FUZZ, max_examples=40)
def test_bundle_weights(edit: str, which: int, kind: str) -> None:
    """A damaged weights file is always a BundleError naming a weight (the model is never built from it)."""

    def run() -> None:
        with bundle_copy(kind) as bundle:
            path = str(bundle / "model.safetensors")
            state = load_file(path)
            name = sorted(state)[which % len(state)]
            tensor = state[name]
            changed: dict[str, Callable[[], torch.Tensor]] = {
                "nan": lambda: tensor.clone().fill_(math.nan), "inf": lambda: tensor.clone().fill_(math.inf),
                "int32": lambda: tensor.to(torch.int32), "float64": tensor.double,
                "transpose": lambda: tensor.reshape(-1, 1).contiguous(), "empty": lambda: tensor.new_zeros((0,))}
            if edit == "drop":
                del state[name]
            elif edit == "extra":
                state["not.a.weight"] = torch.zeros(2)
            else:
                state[name] = changed[edit]()
            save_file(state, path)
            (load_bundle if kind == "lm" else load_permgen_bundle)(bundle)
            raise AssertionError(f"{edit} of {name} was accepted")

    record("bundle-weights", run, lambda e: isinstance(e, BundleError) and names_one_of(e, ["weight"]))


@given(text=st.text(max_size=40), specials=st.lists(st.sampled_from(SPECIAL_TOKENS), max_size=3))
@settings(FUZZ, max_examples=100)
def test_user_text_never_encodes_to_a_control_id(text: str, specials: list[str]) -> None:
    typed = "".join(s + text for s in specials) or text

    def run() -> None:
        ids = tokenizer().encode(typed)
        assert all(i >= len(SPECIAL_TOKENS) for i in ids)
        assert tokenizer().decode(ids) == typed

    record("prompt-text", run, lambda e: False)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=10)


@given(lines=st.lists(_JSON.map(json.dumps) | st.sampled_from(["{bad", "[" * 50_000 + "]" * 50_000, "\x00"]),
                      min_size=1, max_size=4))
@settings(FUZZ, max_examples=60)
def test_jsonl_corpus(lines: list[str]) -> None:
    def run() -> None:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "corpus.jsonl"
            path.write_text("\n".join(lines) + "\n")
            assert all(isinstance(d, str) for d in read_jsonl(path))

    record("jsonl", run, lambda e: isinstance(e, CorpusError) and "corpus.jsonl:" in str(e))


@given(values=st.dictionaries(st.sampled_from(["lr", "min_lr", "batch_size", "max_steps", "valid_fraction",
                                               "grad_clip", "warmup_steps", "save_every", "beta1"]),
                              ints() | floats(), max_size=3))
@settings(FUZZ, max_examples=100)
def test_train_config(values: dict[str, Any]) -> None:
    record("train-config", lambda: TrainConfig(**values),
           lambda e: isinstance(e, ConfigError) and names_one_of(e, TRAIN_FIELDS))


_CLI_FLAGS = st.lists(st.tuples(st.sampled_from(["--temperature", "--top-p", "--top-k", "--repetition-penalty",
                                                 "--seed", "-n", "--class-temperature", "--max-new-tokens",
                                                 "--prompt"]),
                                st.sampled_from(["1e-300", "1e-39", "1e308", "inf", "nan", "-1", "0", "1.5", "x",
                                                 "<|eos|>", "\udcff", "3"])),
                      min_size=1, max_size=3)


@given(flags=_CLI_FLAGS)
@settings(FUZZ, max_examples=25)
def test_generate_command_line(flags: list[tuple[str, str]], capsys: pytest.CaptureFixture[str]) -> None:
    """`variorum generate` with hostile flags exits 0 or 2 with a message, never a traceback."""
    argv = ["generate", "--bundle", str(saved_bundles()["lm"]), "--max-new-tokens", "2",
            *(part for pair in flags for part in pair)]

    def run() -> None:
        try:
            code = cli_main(argv)
        except SystemExit as stop:  # argparse: an unparsable number is a usage error
            code = int(stop.code or 0)
        output = capsys.readouterr()
        assert code in (0, 2) and "Traceback" not in output.out + output.err

    record("cli-generate", run, lambda e: False)
