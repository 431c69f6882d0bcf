"""Batched streaming generation: seeds reproduce, streaming adds up, cancellation is prompt."""

from __future__ import annotations

import pytest
import torch

from engine.backbones.kv_cache import KVCache
from engine.decoding import DecodeConfig, VariantStream, generate_variants
from engine.decoding.step import DecodeRows, LanguageModelRows
from engine.decoding.stream import FINISH_CANCELLED, FINISH_EOS, FINISH_LENGTH, INCOMPLETE_CHAR
from engine.decoding.text_cleanup import GeneratedText
from engine.model import LanguageModel
from engine.tokenizer import VariorumTokenizer
from tests.conftest import tiny_config

SETTINGS = DecodeConfig(max_new_tokens=24, seed=7, top_k=40, temperature=1.3)


def test_fixed_seed_reproduces_variants_exactly(tiny_model: LanguageModel, tokenizer: VariorumTokenizer) -> None:
    first = generate_variants(tiny_model, tokenizer, "Mara found", 3, SETTINGS)
    second = generate_variants(tiny_model, tokenizer, "Mara found", 3, SETTINGS)
    assert [v.token_ids for v in first] == [v.token_ids for v in second]
    assert len({tuple(v.token_ids) for v in first}) == 3  # different seeds, different variants
    assert [v.seed for v in first] == [7, 8, 9]


def test_text_shows_every_complete_character_of_the_tokens_so_far(
    tiny_model: LanguageModel, tokenizer: VariorumTokenizer
) -> None:
    stream = VariantStream(tiny_model, tokenizer, [], 1, SETTINGS)
    variant = stream.variants[0]
    ids = tokenizer.encode("Mara ate crème brûlée 😀 and ☕ today")
    deltas = []
    for token in ids:  # as streaming appends them; only the tokens after the last complete character are decoded
        variant.token_ids.append(token)
        deltas.append(stream._update_text(variant))
        full = tokenizer.decode(variant.token_ids)
        if not full.endswith(INCOMPLETE_CHAR):
            assert variant.text == full
    assert "" in deltas  # some characters span several byte tokens and waited for the rest
    assert "".join(deltas) == variant.text == tokenizer.decode(ids)


def test_variant_seed_reproduces_alone(tiny_model: LanguageModel, tokenizer: VariorumTokenizer) -> None:
    batch = generate_variants(tiny_model, tokenizer, "Tom wanted", 4, SETTINGS)
    alone = generate_variants(tiny_model, tokenizer, "Tom wanted", 1, SETTINGS.with_seed(batch[2].seed))
    assert alone[0].token_ids == batch[2].token_ids
    assert alone[0].settings == batch[2].settings


def test_streamed_deltas_add_up_to_final_text(tiny_model: LanguageModel, tokenizer: VariorumTokenizer) -> None:
    stream = VariantStream(tiny_model, tokenizer, tokenizer.encode("The dog 🙂"), 3, SETTINGS)
    texts = ["", "", ""]
    counts = [0, 0, 0]
    for event in stream:
        texts[event.variant] += event.text_delta
        counts[event.variant] += 1
    for variant, text, count in zip(stream.variants, texts, counts, strict=True):
        assert text == variant.text
        # what the tokens decode to, cleaned as generated text is (engine/decoding/text_cleanup.py)
        assert GeneratedText("The dog 🙂").add(tokenizer.decode(variant.token_ids)).startswith(text)
        assert count == len(variant.token_ids) == len(variant.token_log_probs)
        assert variant.finish_reason in (FINISH_EOS, FINISH_LENGTH)


def test_log_probs_are_the_models(tiny_model: LanguageModel, tokenizer: VariorumTokenizer) -> None:
    (variant,) = generate_variants(tiny_model, tokenizer, "Lena", 1, DecodeConfig(max_new_tokens=5, seed=3))
    context = [tokenizer.eos_id, *tokenizer.encode("Lena"), *variant.token_ids]
    full = tiny_model.next_log_probs(torch.tensor([context]))[0]  # [T, V]
    start = len(context) - len(variant.token_ids) - 1
    expected = [float(full[start + i, t]) for i, t in enumerate(variant.token_ids)]
    assert torch.allclose(torch.tensor(variant.token_log_probs), torch.tensor(expected), atol=1e-4)


def test_cancellation_stops_within_one_step(tiny_model: LanguageModel, tokenizer: VariorumTokenizer) -> None:
    produced = 0

    def should_stop() -> bool:
        return produced >= 3

    stream = VariantStream(tiny_model, tokenizer, [], 2, DecodeConfig(max_new_tokens=200, seed=1), should_stop)
    for event in stream:
        if event.variant == 0:
            produced += 1
    assert all(v.finish_reason == FINISH_CANCELLED for v in stream.variants)
    assert len(stream.variants[0].token_ids) == 3


def test_greedy_is_argmax_and_deterministic(tiny_model: LanguageModel, tokenizer: VariorumTokenizer) -> None:
    settings = DecodeConfig(max_new_tokens=6, greedy=True, seed=1)
    a, b = generate_variants(tiny_model, tokenizer, "Ben", 2, settings)
    assert a.token_ids == b.token_ids  # greedy ignores the seed
    context = [tokenizer.eos_id, *tokenizer.encode("Ben")]
    first = int(tiny_model.next_log_probs(torch.tensor([context]))[0, -1].argmax())
    assert a.token_ids[0] == first


def test_generation_past_block_size(tiny_model: LanguageModel, tokenizer: VariorumTokenizer) -> None:
    settings = DecodeConfig(max_new_tokens=3 * tiny_model.config.block_size, seed=2)
    long_prompt = " ".join(["story"] * 50)  # longer than the 32-token block
    variants = generate_variants(tiny_model, tokenizer, long_prompt, 2, settings)
    assert all(len(v.token_ids) >= 1 for v in variants)


def test_eos_ends_a_variant(tiny_model: LanguageModel, tokenizer: VariorumTokenizer) -> None:
    with torch.no_grad():  # make eos overwhelmingly likely
        final_norm = tiny_model.backbone.transformer.ln_f
        final_norm.weight.zero_()
        final_norm.bias.fill_(1.0)  # every hidden state becomes all-ones
        tiny_model.head.proj.weight[tokenizer.eos_id] = 10.0
    (variant,) = generate_variants(tiny_model, tokenizer, "Ivy", 1, DecodeConfig(max_new_tokens=50, seed=0))
    assert variant.finish_reason == FINISH_EOS
    assert variant.token_ids[-1] == tokenizer.eos_id


def _decode(stream: VariantStream) -> list[list[int]]:
    for _ in stream:
        pass
    return [v.token_ids for v in stream.variants]


def _seeded_model(tokenizer: VariorumTokenizer, config: dict[str, object]) -> LanguageModel:
    torch.manual_seed(0)
    return LanguageModel(tiny_config(tokenizer.vocab_size, **config)).eval()


def _pin_eos_to_nmst_bound(model: LanguageModel) -> None:
    """NMST: z = u·h = −6.4 whatever h (LayerNorm output sums to 0), so p(eos_t) ≈ its step bound."""
    with torch.no_grad():
        model.backbone.transformer.ln_f.bias.fill_(1.0)
        model.head.gate.weight.fill_(-0.2)


@pytest.mark.parametrize("config", [{}, {"termination": "nmst", "termination_eps": 0.005}])
def test_rows_with_their_own_prompts_match_each_prompt_alone(
    tokenizer: VariorumTokenizer, config: dict[str, object]
) -> None:
    tiny_model = _seeded_model(tokenizer, config)
    if config:
        _pin_eos_to_nmst_bound(tiny_model)
    # Equal-length prompts, one with a document break (eos) inside: its step count (NMST's t) restarts there.
    prompts = [tokenizer.encode(t)[:4] for t in ("Mara found an old key", "Tom wanted a red kite", "The dog ran")]
    prompts.append([prompts[0][0], tokenizer.eos_id, *prompts[1][:2]])
    assert len({len(p) for p in prompts}) == 1
    settings = DecodeConfig(max_new_tokens=40, seed=11, top_k=40, temperature=1.3, repetition_penalty=1.2)
    stream = VariantStream(tiny_model, tokenizer, [], len(prompts), settings, prompts=prompts)  # 45 > block 32
    batch = _decode(stream)
    assert [v.seed for v in stream.variants] == [11, 12, 13, 14]
    # the rows' first tokens have t = the prompt's tokens since its last eos, plus one
    assert LanguageModelRows(tiny_model, stream.row_prompts, 1).steps.tolist() == [5, 5, 5, 3]
    for i, prompt in enumerate(prompts):
        alone = VariantStream(tiny_model, tokenizer, prompt, 1, settings.with_seed(11 + i))
        assert batch[i] == _decode(alone)[0]
        # log p depends on the step t under NMST: equal log-probs mean the row used its own t
        assert stream.variants[i].token_log_probs == pytest.approx(alone.variants[0].token_log_probs, abs=1e-5)
        assert stream.variants[i].token_groups == alone.variants[0].token_groups
    assert len({tuple(b) for b in batch}) == len(prompts)


def test_row_prompts_are_checked(tiny_model: LanguageModel, tokenizer: VariorumTokenizer) -> None:
    settings = DecodeConfig(max_new_tokens=2, seed=0)
    with pytest.raises(ValueError, match="equal token lengths"):
        VariantStream(tiny_model, tokenizer, [], 2, settings, prompts=[[5, 6], [7]])
    with pytest.raises(ValueError, match="one prompt per variant"):
        VariantStream(tiny_model, tokenizer, [], 3, settings, prompts=[[5], [7]])
    with pytest.raises(ValueError, match="not both"):
        VariantStream(tiny_model, tokenizer, [5], 1, settings, prompts=[[5]])


class RowCountingRunner:
    """The model as backbone runner, noting how many rows each call decodes."""

    def __init__(self, model: LanguageModel) -> None:
        self.model = model
        self.rows: list[int] = []

    def new_cache(self, rows: int, positions: int | None = None) -> KVCache:
        return self.model.new_cache(rows, positions)

    def decode(self, input_ids: torch.Tensor, cache: KVCache) -> torch.Tensor:
        self.rows.append(int(input_ids.shape[0]))
        return self.model.decode(input_ids, cache)


@pytest.mark.parametrize("config", [{}, {"termination": "nmst", "termination_eps": 0.005}])
def test_ended_rows_leave_the_batch_and_the_rest_decode_as_alone(
    tokenizer: VariorumTokenizer, config: dict[str, object]
) -> None:
    model = _seeded_model(tokenizer, config)
    # eos likely enough that variants end at different steps, some at the length cap
    if config:
        _pin_eos_to_nmst_bound(model)
    else:
        with torch.no_grad():
            model.head.proj.weight[tokenizer.eos_id] *= 30
    settings = DecodeConfig(max_new_tokens=40, seed=3, repetition_penalty=1.2)  # prompt + 40 > block 32: a re-encode
    runner = RowCountingRunner(model)
    stream = VariantStream(model, tokenizer, tokenizer.encode("Mara found"), 5, settings, runner=runner)
    streamed = [""] * 5
    for event in stream:
        streamed[event.variant] += event.text_delta
    lengths = [len(v.token_ids) for v in stream.variants]
    assert len(set(lengths)) >= 3 and FINISH_EOS in {v.finish_reason for v in stream.variants}
    # after the prompt, one decode call per step (a token, or the window's re-encode) of the rows still going
    assert runner.rows[1:] == [sum(length > step for length in lengths) for step in range(1, max(lengths))]
    assert runner.rows[-1] < 5
    for variant, text in zip(stream.variants, streamed, strict=True):
        alone = VariantStream(model, tokenizer, tokenizer.encode("Mara found"), 1, settings.with_seed(variant.seed))
        assert _decode(alone)[0] == variant.token_ids
        assert alone.variants[0].finish_reason == variant.finish_reason
        assert variant.token_log_probs == pytest.approx(alone.variants[0].token_log_probs, abs=1e-5)
        assert text == variant.text


def test_ended_rows_that_stay_in_the_batch_as_on_a_gpu_write_the_same_variants(
    tokenizer: VariorumTokenizer, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = _seeded_model(tokenizer, {})
    with torch.no_grad():
        model.head.proj.weight[tokenizer.eos_id] *= 30  # variants end at different steps
    settings = DecodeConfig(max_new_tokens=40, seed=3, repetition_penalty=1.2)
    dropped = generate_variants(model, tokenizer, "Mara found", 5, settings)
    monkeypatch.setattr(DecodeRows, "drop_ended", lambda self, active: None)  # a GPU keeps every row
    kept = generate_variants(model, tokenizer, "Mara found", 5, settings)
    assert len({len(v.token_ids) for v in dropped}) >= 3
    for a, b in zip(dropped, kept, strict=True):
        assert (a.token_ids, a.text, a.finish_reason) == (b.token_ids, b.text, b.finish_reason)
        assert a.token_log_probs == pytest.approx(b.token_log_probs, abs=1e-5)
