"""Golden decodes: fixed seeds give the same tokens, groups and log-probs as the recorded ones.

The recording (tests/fixtures/golden_decoding.json) was made from the decoders before they were
merged into one step interface, one sampler and one beam search (docs/architecture.md), so these
tests pin that the merge changed no decode: every LM head (softmax, F², POSG, ST, NMST and
termination around F² / POSG), the NMST paper's greedy and beam decoders, PermGen sampling and
sentence beams, and paraphrases. CPU only: other devices may round differently.

Regenerate (only when a decode is *meant* to change): `python -m tests.engine.decoding.test_golden_decoding`.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from engine.decoding import DecodeConfig, VariantStream
from engine.decoding.stream import Variant
from engine.heads.posg import POSGHead
from engine.model import LanguageModel
from engine.permgen.data import tokenizer_texts
from engine.permgen.loaded import PermGenLoadedModel
from engine.permgen.model import PermGenModel
from engine.permgen.readers import read_examples
from engine.tokenizer import VariorumTokenizer
from tests.conftest import story_lines, tiny_config
from tests.engine.permgen.conftest import STORIES, tiny_permgen_config

GOLDEN = Path(__file__).parents[2] / "fixtures" / "golden_decoding.json"
PROMPT = "Mara found"
LM_SETTINGS: dict[str, dict[str, Any]] = {
    "sampled": {"max_new_tokens": 14, "seed": 7, "top_k": 40, "temperature": 1.3},
    "nucleus": {"max_new_tokens": 14, "seed": 11, "top_p": 0.8, "repetition_penalty": 1.3},
    "greedy": {"max_new_tokens": 14, "seed": 1, "greedy": True},
    "flat": {"max_new_tokens": 14, "seed": 3, "flat_sampling": True},
}
# head name → (model config overrides, which settings apply)
LM_HEADS: dict[str, tuple[dict[str, object], list[str]]] = {
    "softmax": ({}, ["sampled", "nucleus", "greedy"]),
    "f2": ({"head": "f2"}, ["sampled", "greedy", "flat", "class"]),
    "posg": ({"head": "posg", "pos_tags": ["NN", "JJ", "SPECIAL"]}, ["sampled", "greedy", "flat", "pos"]),
    "nmst": ({"head": "nmst", "termination_eps": 0.001}, ["sampled", "nucleus", "greedy"]),
    "st": ({"head": "st", "termination_eps": 0.001}, ["sampled", "nucleus", "greedy"]),
    "f2+nmst": ({"head": "f2", "termination": "nmst", "termination_eps": 0.001}, ["sampled", "greedy", "class"]),
    "posg+st": ({"head": "posg", "pos_tags": ["NN", "JJ", "SPECIAL"], "termination": "st",
                 "termination_eps": 0.001}, ["sampled", "pos", "flat"]),
}
EXTRA_SETTINGS: dict[str, dict[str, Any]] = {
    "class": {"max_new_tokens": 14, "seed": 5, "class_temperature": 0.7, "class_rarity_bias": 2.0, "top_k": 50},
    "pos": {"max_new_tokens": 14, "seed": 5, "pos_top_k": 2, "pos_bias": {"NN": 4.0}},
}


@functools.cache
def permgen_tokenizer() -> VariorumTokenizer:
    return VariorumTokenizer.train(tokenizer_texts(read_examples(STORIES)), vocab_size=330)


@functools.cache
def golden_tokenizer() -> VariorumTokenizer:
    return VariorumTokenizer.train(story_lines(), vocab_size=320)


def lm_model(tokenizer: VariorumTokenizer, overrides: dict[str, object]) -> LanguageModel:
    from engine.heads.registry import fit_head, load_fitted_head

    config, state = fit_head(tiny_config(tokenizer.vocab_size, **overrides), tokenizer)
    torch.manual_seed(0)
    model = LanguageModel(config)
    load_fitted_head(model.head, state)
    head = getattr(model.head, "inner", model.head)
    if isinstance(head, POSGHead):
        membership = torch.zeros(3, tokenizer.vocab_size, dtype=torch.bool)
        membership[0, 10::2] = membership[1, 11::2] = True
        membership[2, :10] = True
        head.membership.copy_(membership)
    gate = getattr(model.head, "gate", None)
    if gate is not None:  # untrained, p(eos) would be ~1/2 at once: make z_t large (ST) / small (NMST)
        with torch.no_grad():
            model.backbone.transformer.ln_f.bias[0] = 20.0
            gate.weight.zero_()
            gate.weight[0, 0] = 0.6 if overrides.get("head") == "st" or overrides.get("termination") == "st" else -0.4
    return model.eval()


def record(variants: list[Variant]) -> list[dict[str, Any]]:
    return [{"ids": v.token_ids, "groups": v.token_groups, "log_probs": [round(x, 4) for x in v.token_log_probs],
             "finish": v.finish_reason} for v in variants]


def lm_case(head: str, setting: str) -> list[dict[str, Any]]:
    tokenizer = golden_tokenizer()
    overrides, _ = LM_HEADS[head]
    model = lm_model(tokenizer, overrides)
    settings = DecodeConfig(**{**LM_SETTINGS, **EXTRA_SETTINGS}[setting])
    stream = VariantStream(model, tokenizer, tokenizer.encode(PROMPT), 3, settings)
    list(stream)
    return record(stream.variants)


def termination_case(head: str, decoder: str) -> list[dict[str, Any]]:
    """The NMST benchmark's decoders (greedy and beam on the marginal) for two prompts."""
    from engine.decoding.nmst_decoders import decode_prompts, parse_decoder

    tokenizer = golden_tokenizer()
    model = lm_model(tokenizer, LM_HEADS[head][0])
    prompts = [tokenizer.encode(PROMPT), tokenizer.encode("The dog")]
    out = decode_prompts(model, tokenizer, prompts, parse_decoder(decoder), cap=20)
    return [{"ids": c.tokens, "length": c.length, "log_prob": round(c.log_prob, 3)} for c in out]


def permgen_model(head: str) -> tuple[PermGenModel, VariorumTokenizer]:
    tokenizer = permgen_tokenizer()
    overrides: dict[str, object] = {} if head == "softmax" else {"head": "posg", "pos_tags": ["NN", "VB", "SPECIAL"]}
    torch.manual_seed(0)
    model = PermGenModel(tiny_permgen_config(tokenizer.vocab_size, **overrides)).eval()
    if isinstance(model.head, POSGHead):
        membership = torch.zeros(3, tokenizer.vocab_size, dtype=torch.bool)
        membership[0, 23::2] = membership[1, 24::2] = True
        membership[2, :23] = True
        model.head.membership.copy_(membership)
    return model, tokenizer


def permgen_case(head: str, task: str, beam: int, setting: str) -> list[dict[str, Any]]:
    from engine.front_door import GenerationRequest
    from engine.permgen.bundle import PermGenBundle

    model, tokenizer = permgen_model(head)
    model.config = dataclasses.replace(model.config, task=task)
    loaded = PermGenLoadedModel(PermGenBundle(Path("unused"), model, tokenizer, ""), torch.device("cpu"))
    settings = DecodeConfig(**{**LM_SETTINGS, **EXTRA_SETTINGS}[setting])
    if task == "paraphrase":
        request = GenerationRequest(prompt="Tom went to the store. He bought milk.", n=2, task=task, decode=settings,
                                    beam_width=beam)
    else:
        request = GenerationRequest(title="the lost dog", n=3, task=task, decode=settings, num_sentences=3,
                                    beam_width=beam)
    stream = loaded.stream(request)
    list(stream)
    return [{**r, "text": v.text} for r, v in zip(record(stream.variants), stream.variants, strict=True)]


CASES: dict[str, Callable[[], list[dict[str, Any]]]] = {
    **{f"lm/{head}/{setting}": (lambda h=head, s=setting: lm_case(h, s))
       for head, (_, settings) in LM_HEADS.items() for setting in settings},
    **{f"termination/{head}/{decoder}": (lambda h=head, d=decoder: termination_case(h, d))
       for head in ("nmst", "st", "softmax") for decoder in ("greedy", "beam-3")},
    **{f"permgen/{head}/{task}/{beam}/{setting}": (lambda h=head, t=task, b=beam, s=setting: permgen_case(h, t, b, s))
       for head, task, beam, setting in [("softmax", "story", 1, "sampled"), ("softmax", "story", 1, "greedy"),
                                         ("softmax", "story", 3, "greedy"), ("posg", "story", 1, "pos"),
                                         ("posg", "story", 1, "flat"), ("softmax", "paraphrase", 1, "nucleus"),
                                         ("softmax", "paraphrase", 3, "greedy"), ("posg", "story", 2, "greedy")]},
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_decode_matches_the_recording(case: str) -> None:
    golden = json.loads(GOLDEN.read_text())
    got = CASES[case]()
    want = golden[case]
    assert [{k: v for k, v in row.items() if k not in ("log_probs", "log_prob")} for row in got] == \
        [{k: v for k, v in row.items() if k not in ("log_probs", "log_prob")} for row in want]
    for got_row, want_row in zip(got, want, strict=True):
        for key in ("log_probs", "log_prob"):
            if key in want_row:
                assert torch.allclose(torch.tensor(got_row[key], dtype=torch.float64),
                                      torch.tensor(want_row[key], dtype=torch.float64), atol=2e-3), key


if __name__ == "__main__":
    GOLDEN.write_text(json.dumps({name: CASES[name]() for name in sorted(CASES)}, indent=None) + "\n")
    print(f"wrote {GOLDEN}")
