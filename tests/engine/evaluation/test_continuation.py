"""Windows and batched continuation: same tokens as VariantStream, eos handled, p(eos) recorded."""

from __future__ import annotations

import pytest
import torch

from engine.decoding import DecodeConfig, VariantStream
from engine.evaluation.continuation import continue_prefixes, make_windows, rescore, rescore_batch
from engine.evaluation.decoders import parse_decoder
from engine.model import LanguageModel
from engine.tokenizer import VariorumTokenizer
from tests.conftest import story_lines


def test_windows_cut_the_eos_separated_stream() -> None:
    windows = make_windows([[5, 6, 7], [8, 9]], eos_id=0, prefix_len=2, continuation_len=2, max_windows=None)
    # stream: 0 5 6 7 0 8 9 → windows (0 5 | 6 7) ; the rest is shorter than a window
    assert [(w.prefix, w.reference) for w in windows] == [([0, 5], [6, 7])]
    windows = make_windows([[5, 6, 7], [8, 9, 10]], 0, 2, 2, None)
    assert windows[1].prefix == [0, 8] and windows[1].reference == [9, 10]
    assert make_windows([[5, 6, 7, 8, 9, 1, 2, 3]], 0, 2, 1, 2)[-1].prefix == [7, 8]
    with pytest.raises(ValueError, match="fewer than one window"):
        make_windows([[1]], 0, 5, 5, None)


@pytest.mark.parametrize("spec", ["topk=5", "topp=0.8,temp=1.3"])
def test_continuations_are_the_app_decoder_with_seed_per_window(
    tiny_model: LanguageModel, tokenizer: VariorumTokenizer, spec: str
) -> None:
    windows = make_windows(tokenizer.encode_batch(story_lines()), tokenizer.eos_id, 20, 30, 4)
    settings = parse_decoder(spec, 30)  # 21-token context + 30 new > block 32: exercises the window
    outs = continue_prefixes(tiny_model, tokenizer, [w.prefix for w in windows], settings, seed=7)
    for i, window in enumerate(windows):
        stream = VariantStream(tiny_model, tokenizer, window.prefix, 1, settings.with_seed(7 + i))
        for _ in stream:
            pass
        assert outs[i].token_ids == [t for t in stream.variants[0].token_ids if t != tokenizer.eos_id]
        # p(eos) is scored for the steps that fit in the 32-token block: 32 − 21 + 1
        expected = min(outs[i].length or 30, 12)
        assert len(outs[i].eos_probs) == expected and all(0 < p < 1 for p in outs[i].eos_probs)


def test_rescored_distributions_align_with_the_generated_steps(
    tiny_model: LanguageModel, tokenizer: VariorumTokenizer
) -> None:
    prefix = tokenizer.encode("Mara found an old key")
    stream = VariantStream(tiny_model, tokenizer, prefix, 1, DecodeConfig(max_new_tokens=8, greedy=True, seed=0))
    for _ in stream:
        pass
    generated = stream.variants[0].token_ids
    scores = rescore(tiny_model, stream.row_prompts[0], generated)
    assert scores.shape == (len(generated), tokenizer.vocab_size)
    assert scores.argmax(-1).tolist() == generated  # greedy picked the argmax of each rescored row
    assert torch.exp(scores).sum(-1) == pytest.approx(torch.ones(len(generated)), abs=1e-5)


def test_eos_ends_a_continuation_and_sets_its_length(
    tiny_model: LanguageModel, tokenizer: VariorumTokenizer, monkeypatch: pytest.MonkeyPatch
) -> None:
    head = tiny_model.head
    original = head.log_probs
    calls = {"n": 0}

    def eos_from_third_step(hidden: torch.Tensor, steps: torch.Tensor | None = None) -> torch.Tensor:
        calls["n"] += 1  # one call per decoding step for a softmax head
        scores = original(hidden, steps).clone()
        scores[:, tokenizer.eos_id] = 50.0 if calls["n"] >= 3 else -50.0
        return torch.log_softmax(scores, dim=-1)

    monkeypatch.setattr(head, "log_probs", eos_from_third_step)
    # no timed trial decodes (engine/decoding/cpu_threads.py): every call is a step
    monkeypatch.setenv("VARIORUM_THREADS", "1")
    (out,) = continue_prefixes(tiny_model, tokenizer, [[5, 6]], DecodeConfig(max_new_tokens=10, greedy=True))
    assert out.length == 3 and len(out.token_ids) == 2 and len(out.groups) == 2
    assert len(out.eos_probs) == 3


def test_decoder_specs_and_errors() -> None:
    assert parse_decoder("greedy", 5).greedy
    settings = parse_decoder("topk=20,temp=0.7", 9)
    assert (settings.top_k, settings.temperature, settings.max_new_tokens) == (20, 0.7, 9)
    with pytest.raises(ValueError, match="unknown part"):
        parse_decoder("beam=4", 5)
    with pytest.raises(ValueError, match="needs a number"):
        parse_decoder("topk=many", 5)


def test_batching_changes_nothing_but_speed(tiny_model: LanguageModel, tokenizer: VariorumTokenizer) -> None:
    windows = make_windows(tokenizer.encode_batch(story_lines()), tokenizer.eos_id, 6, 20, 7)
    prefixes = [w.prefix for w in windows]
    settings = parse_decoder("topp=0.9,rep=1.2", 20)
    seen: list[int] = []
    one = continue_prefixes(tiny_model, tokenizer, prefixes, settings, seed=5, batch_size=1)
    three = continue_prefixes(tiny_model, tokenizer, prefixes, settings, seed=5, on_prefix=seen.append, batch_size=3)
    assert seen == [3, 3, 1]  # progress counts prefixes, a batch at a time
    assert [c.token_ids for c in one] == [c.token_ids for c in three]
    assert [c.length for c in one] == [c.length for c in three]
    for a, b in zip(one, three, strict=True):
        assert a.groups == b.groups and a.eos_probs == pytest.approx(b.eos_probs, rel=1e-4)
    assert len({tuple(c.token_ids) for c in one}) == len(prefixes)


def test_prefixes_of_different_lengths_are_batched_in_runs(
    tiny_model: LanguageModel, tokenizer: VariorumTokenizer
) -> None:
    prefixes = [[5, 6], [7, 8], [9], [10, 11], [12, 13]]
    settings = DecodeConfig(max_new_tokens=6, seed=0, top_k=20)
    outs = continue_prefixes(tiny_model, tokenizer, prefixes, settings, seed=2, batch_size=4)
    for i, prefix in enumerate(prefixes):
        (alone,) = continue_prefixes(tiny_model, tokenizer, [prefix], settings, seed=2 + i, batch_size=1)
        assert outs[i].token_ids == alone.token_ids
    with pytest.raises(ValueError, match="batch size"):
        continue_prefixes(tiny_model, tokenizer, prefixes, settings, batch_size=65)


def test_padded_rescoring_equals_one_at_a_time(tiny_model: LanguageModel, tokenizer: VariorumTokenizer) -> None:
    prompts = [[tokenizer.eos_id, 5, 6, 7], [tokenizer.eos_id, 8, 9, 10], [tokenizer.eos_id, *range(11, 40)]]
    generated = [[20, 21, 22, 23, 24], [30], [41, 42, 43, 44, 45]]  # the last runs past the 32-token block
    batch = rescore_batch(tiny_model, prompts, generated, tokenizer.pad_id)
    assert [len(b) for b in batch] == [5, 1, 3]
    for prompt, gen, scores in zip(prompts, generated, batch, strict=True):
        assert torch.allclose(scores, rescore(tiny_model, prompt, gen), atol=1e-5)


def test_drafts_decode_k_per_window_and_keep_the_picked_one(
    tiny_model: LanguageModel, tokenizer: VariorumTokenizer
) -> None:
    windows = make_windows(tokenizer.encode_batch(story_lines()), tokenizer.eos_id, 6, 10, 5)
    prefixes = [w.prefix for w in windows]
    settings = parse_decoder("topk=20,drafts=3", 10)
    asked: list[tuple[list[int], int]] = []

    def pick(prefix: object, drafts: list[object]) -> int:
        asked.append((list(prefix), len(drafts)))  # type: ignore[call-overload]
        return len(asked) % 3  # windows keep drafts 1, 2, 0, 1, 2
    outs = continue_prefixes(tiny_model, tokenizer, prefixes, settings, seed=4, batch_size=7, pick=pick)
    assert asked == [(p, 3) for p in prefixes]  # 7 // 3 = 2 windows a batch, every window asked once
    for i, prefix in enumerate(prefixes):
        kept = (i + 1) % 3
        stream = VariantStream(tiny_model, tokenizer, prefix, 1, settings.with_seed(4 + i * 3 + kept))
        for _ in stream:
            pass
        assert outs[i].token_ids == [t for t in stream.variants[0].token_ids if t != tokenizer.eos_id]
    with pytest.raises(ValueError, match="choose among"):
        continue_prefixes(tiny_model, tokenizer, prefixes, settings)
