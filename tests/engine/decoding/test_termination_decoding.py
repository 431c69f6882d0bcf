"""Decoders under VA / ST / NMST: every decode ends under ST/NMST (Theorem 3), not under VA;
the incremental state (KV cache, step t, ST's running product) matches whole-sequence scoring.

The paper's greedy / top-k / nucleus are VariantStream settings and its beam the one beam search
(engine/decoding/nmst_decoders.py names them as in Table 4)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from torch import nn

from engine.backbones.kv_cache import KVCache
from engine.decoding.generate import VariantStream, generate_variants
from engine.decoding.nmst_decoders import Decoder, beam_continuations, decode_prompts, parse_decoder
from engine.decoding.processors import DecodeSettingError
from engine.decoding.settings import DecodeConfig
from engine.decoding.step import DecodeRows, LanguageModelRows
from engine.decoding.stream import FINISH_EOS
from engine.model import EOS_ID, LanguageModel
from engine.tokenizer import VariorumTokenizer
from tests.conftest import tiny_config

DECODERS = ["greedy", "top-2", "top-4", "nucleus-0.2", "nucleus-0.4", "nucleus-0.9", "beam-2", "beam-4"]
FAVOURITE = 7  # the token the adversarial model always prefers


class ConstantBackbone(nn.Module):
    """Every position's hidden state is the same vector: the model ignores its input."""

    def __init__(self, vocab_size: int, n_embd: int) -> None:
        super().__init__()
        self.token_embedding = nn.Embedding(vocab_size, n_embd)

    def forward(self, input_ids: torch.Tensor, past: object = None, position_ids: object = None,
                use_cache: bool = False) -> tuple[torch.Tensor, None]:
        return torch.ones(*input_ids.shape, self.token_embedding.embedding_dim), None

    def new_cache(self, rows: int, positions: int | None = None) -> KVCache:  # always one 32-position block
        return KVCache.allocate(1, rows, 1, 32, 1, self.token_embedding.weight)

    def decode(self, input_ids: torch.Tensor, cache: KVCache) -> torch.Tensor:
        cache.advance(input_ids.shape[1])
        return self(input_ids)[0]


def adversarial_model(termination: str, eps: float, vocab: int = 50, dim: int = 8) -> LanguageModel:
    """p_inner puts ~all mass on FAVOURITE and ~none on eos; the ST/NMST gate says "never stop"."""
    config = tiny_config(vocab, n_embd=dim, tie_embeddings=False, termination=termination, termination_eps=eps)
    model = LanguageModel(config, ConstantBackbone(vocab, dim)).eval()  # type: ignore[arg-type]
    inner = getattr(model.head, "inner", model.head)
    with torch.no_grad():
        inner.proj.weight.zero_()
        inner.proj.weight[FAVOURITE] = 5.0  # logit 40 for the favourite
        inner.proj.weight[EOS_ID] = -5.0  # logit −40 for eos
        if termination != "va":  # "never stop": NMST's σ(z) weighs stopping, ST's σ(z) is the chance to go on
            model.head.gate.weight.fill_(-5.0 if termination == "nmst" else 5.0)  # z = ∓40
    return model


def half_life(eps: float) -> int:
    """t_1/2: the first t with 1 − (1 − ε)^t > 1/2, after which eos is the most probable token."""
    return math.floor(math.log(0.5) / math.log1p(-eps)) + 1


@pytest.mark.parametrize("termination", ["st", "nmst"])
@pytest.mark.parametrize("name", DECODERS)
def test_every_decoder_ends_under_st_and_nmst(termination: str, name: str, tokenizer: VariorumTokenizer) -> None:
    eps, cap = 0.05, 400
    model = adversarial_model(termination, eps)
    decoder = parse_decoder(name)
    results = decode_prompts(model, tokenizer, [[3, 4, 5]] * 6, decoder, cap, seed=0)
    lengths = [r.length for r in results]
    assert all(n is not None for n in lengths), lengths
    # Eos is the argmax from t_1/2 on (t counts the 3 prompt tokens): greedy and beam stop by then.
    longest = max(n for n in lengths if n is not None)
    if decoder.kind in ("greedy", "beam"):
        assert longest <= half_life(eps) - 3 + decoder.width
    else:  # past t_1/2 each step goes on with probability < 1/2 (and shrinking): seeded, far below the cap
        assert longest <= 3 * half_life(eps)


@pytest.mark.parametrize("name", DECODERS)
def test_va_does_not_end_before_the_cap(name: str, tokenizer: VariorumTokenizer) -> None:
    results = decode_prompts(adversarial_model("va", 0.05), tokenizer, [[3, 4, 5]] * 3, parse_decoder(name), 30)
    assert all(r.length is None and len(r.tokens) == 30 and r.tokens[-1] == FAVOURITE for r in results)


@pytest.mark.parametrize("termination", ["va", "st", "nmst"])
def test_incremental_log_probs_match_whole_sequence_scoring(termination: str, tokenizer: VariorumTokenizer) -> None:
    torch.manual_seed(5)
    model = LanguageModel(tiny_config(tokenizer.vocab_size, termination=termination, termination_eps=0.01)).eval()
    prompt = tokenizer.encode("The dog ran")
    results = decode_prompts(model, tokenizer, [prompt, prompt[:2]], Decoder("top-k", k=5), cap=12, seed=1)
    for start, result in zip([prompt, prompt[:2]], results, strict=True):
        ids = torch.tensor([[EOS_ID, *start, *result.tokens]])
        scored = model.next_log_probs(ids)[0, len(start):-1].gather(-1, ids[0, len(start) + 1:, None]).sum()
        assert result.log_prob == pytest.approx(float(scored), abs=1e-4)


@pytest.mark.parametrize("termination", ["nmst", "st"])
def test_streaming_decoder_matches_whole_sequence_scoring(termination: str, tokenizer: VariorumTokenizer) -> None:
    # Fails if t is not counted from the document start, or if ST's running product misses the
    # prompt's factors or is not carried from step to step.
    torch.manual_seed(6)
    config = tiny_config(tokenizer.vocab_size, termination=termination, termination_eps=0.2)
    model = LanguageModel(config).eval()
    prompt = "Anna found a cat"
    variants = generate_variants(model, tokenizer, prompt, 2, DecodeConfig(seed=3, max_new_tokens=30))
    start = tokenizer.encode(prompt)
    for variant in variants:
        ids = torch.tensor([[EOS_ID, *start, *variant.token_ids]])
        expected = model.next_log_probs(ids)[0, len(start):-1].gather(-1, ids[0, len(start) + 1:, None])[:, 0]
        torch.testing.assert_close(torch.tensor(variant.token_log_probs), expected, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("termination", ["nmst", "st"])
def test_streaming_decoder_ends_under_st_and_nmst(termination: str, tokenizer: VariorumTokenizer) -> None:
    model = adversarial_model(termination, 0.1, vocab=tokenizer.vocab_size)
    variants = generate_variants(model, tokenizer, "x", 3, DecodeConfig(seed=0, max_new_tokens=300, top_p=0.5))
    assert all(v.finish_reason == FINISH_EOS for v in variants)


def _beam_scores_match(model: LanguageModel, prompt: list[int]) -> bool:
    hypotheses = beam_continuations(model, prompt, Decoder("beam", width=3, n_best=3), cap=10)
    for hypothesis in hypotheses:
        ids = torch.tensor([[EOS_ID, *prompt, *hypothesis.tokens]])
        scored = model.next_log_probs(ids)[0, len(prompt):-1].gather(-1, ids[0, len(prompt) + 1:, None]).sum()
        if abs(hypothesis.log_prob - float(scored)) > 1e-4:
            return False
    return True


def test_st_beam_search_reorders_its_running_state(
    tokenizer: VariorumTokenizer, monkeypatch: pytest.MonkeyPatch
) -> None:
    torch.manual_seed(0)
    model = LanguageModel(tiny_config(tokenizer.vocab_size, termination="st", termination_eps=1e-3)).eval()
    with torch.no_grad():  # peaked tokens and a "go on" gate, so beams live long enough to swap
        model.backbone.transformer.ln_f.bias.fill_(1.0)
        model.head.gate.weight.copy_(6.0 / 32 + 0.3 * torch.randn(1, 32))
        model.backbone.token_embedding.weight.mul_(8.0)
    prompt = tokenizer.encode("Once upon")
    assert _beam_scores_match(model, prompt)
    select = DecodeRows.select

    def forgetful(self: DecodeRows, rows: torch.Tensor) -> None:  # the authors' bug: the state misses its beam
        state = self.state
        select(self, rows)
        if state is not None:
            self.state = state[rows.flip(0)]

    monkeypatch.setattr(DecodeRows, "select", forgetful)
    assert not _beam_scores_match(model, prompt)  # the check above would catch the bug


def test_beam_returns_n_best_in_order_and_decoders_validate() -> None:
    model = adversarial_model("nmst", 0.05)
    best = beam_continuations(model, [3], Decoder("beam", width=4, n_best=3, length_penalty=1.0), cap=200)
    assert len(best) == 3 and all(h.length is not None for h in best)
    ranks = [h.log_prob / len(h.tokens) for h in best]
    assert ranks == sorted(ranks, reverse=True)
    for bad in ("top-0", "nucleus-1.5", "beam-1", "sample"):
        with pytest.raises(DecodeSettingError):
            parse_decoder(bad)


def test_nmst_benchmark_writes_its_report(tiny_bundle: Path, tmp_path: Path) -> None:
    from engine.benchmarks.nmst_termination import main

    out = tmp_path / "report"
    stories = Path(__file__).parents[2] / "fixtures" / "tiny_stories.txt"
    assert main(["--bundle", f"VA={tiny_bundle}", "--files", str(stories), "--prompts", "2", "--prefix", "3",
                 "--cap", "6", "--lengths", "3", "6", "--decoders", "greedy", "beam-2", "--out", str(out)]) == 0
    (report,) = json.loads((out / "report.json").read_text())
    assert set(report["r_nt"]) == {"greedy", "beam-2"}
    assert all(0.0 <= value <= 1.0 for row in report["r_nt"].values() for value in row.values())
    assert (out / "eos_curve.png").is_file() and (out / "lengths.png").is_file()


def test_greedy_nmst_ends_when_eos_is_the_argmax_below_one_half(tokenizer: VariorumTokenizer) -> None:
    """p(eos) = ε = 0.3 at step 1 and the rest is spread over 48 tokens: eos is the argmax though < 1/2."""
    model = adversarial_model("nmst", 0.3)
    inner = getattr(model.head, "inner", model.head)
    with torch.no_grad():
        inner.proj.weight[FAVOURITE] = 0.0  # inner p uniform over every token but eos
    greedy = DecodeConfig(max_new_tokens=20, greedy=True, seed=0)
    (variant,) = generate_variants(model, tokenizer, "", 1, greedy)
    assert variant.token_ids == [EOS_ID] and variant.finish_reason == FINISH_EOS
    assert math.exp(variant.token_log_probs[0]) == pytest.approx(0.3, abs=1e-4)


def test_a_prompt_longer_than_the_window_is_cut_and_counted_as_in_training(tokenizer: VariorumTokenizer) -> None:
    model = LanguageModel(tiny_config(tokenizer.vocab_size, termination="nmst", termination_eps=0.02)).eval()
    long_prompt = tokenizer.encode("Tom went home and slept. " * 20)  # far beyond the 32-token block
    stream = VariantStream(model, tokenizer, long_prompt, 2, DecodeConfig(max_new_tokens=3, seed=1))
    first_steps = LanguageModelRows(model, stream.row_prompts, 1).steps.tolist()  # t of each row's first token
    assert stream.prompt_cut and first_steps == [17, 17]  # after the last half-block, which has no eos inside
    list(stream)
    assert all(v.prompt_cut for v in stream.variants)
    short = VariantStream(model, tokenizer, long_prompt[:5], 1, DecodeConfig(max_new_tokens=3, seed=1))
    assert not short.prompt_cut and LanguageModelRows(model, short.row_prompts, 1).steps.tolist() == [6]


def test_nmst_ends_even_when_temperature_flattens_eos_away(tokenizer: VariorumTokenizer) -> None:
    """At the hottest allowed temperature (100) p(eos) is near 1/V; it is held at ≥ 1 − (1 − ε)^t, so
    every variant ends early."""
    torch.manual_seed(0)
    model = LanguageModel(tiny_config(tokenizer.vocab_size, termination="nmst", termination_eps=0.1)).eval()
    hot = DecodeConfig(max_new_tokens=4096, temperature=100.0, seed=2)
    variants = generate_variants(model, tokenizer, "Tom", 4, hot)
    assert all(v.finish_reason == FINISH_EOS and len(v.token_ids) < 200 for v in variants)
