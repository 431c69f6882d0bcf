"""The step interface and the one sampler: pluggable backbone runner, rows that move together,
exact allowed-token restriction for every head, and no import cycle between the two APIs."""

from __future__ import annotations

import subprocess
import sys

import torch

from engine.backbones.kv_cache import KVCache
from engine.decoding import DecodeConfig, VariantStream
from engine.decoding.step import LanguageModelRows
from engine.decoding.token_sampler import TokenSampler
from engine.model import EOS_ID, LanguageModel
from engine.tokenizer import VariorumTokenizer
from tests.conftest import tiny_config
from tests.engine.heads.f2_support import build_f2_model


class CountingRunner:
    """A backbone runner (new_cache / decode) that records its calls and delegates to the model."""

    def __init__(self, model: LanguageModel) -> None:
        self.model, self.calls = model, 0

    def new_cache(self, rows: int, positions: int | None = None) -> KVCache:
        return self.model.new_cache(rows, positions)

    def decode(self, input_ids: torch.Tensor, cache: KVCache) -> torch.Tensor:
        self.calls += 1
        return self.model.decode(input_ids, cache)


def test_the_backbone_runner_plugs_in(tiny_model: LanguageModel, tokenizer: VariorumTokenizer) -> None:
    settings = DecodeConfig(max_new_tokens=8, seed=4, top_k=30)
    prompt = tokenizer.encode("Mara found")
    default = VariantStream(tiny_model, tokenizer, prompt, 2, settings)
    runner = CountingRunner(tiny_model)
    plugged = VariantStream(tiny_model, tokenizer, prompt, 2, settings, runner=runner)
    list(default), list(plugged)
    assert runner.calls >= 2  # the prompt, then every step
    assert [v.token_ids for v in plugged.variants] == [v.token_ids for v in default.variants]


def test_selected_rows_continue_as_their_own_contexts(device: torch.device, tokenizer: VariorumTokenizer) -> None:
    """select() moves the cache, t and ST's state with the rows: the rows then step exactly like
    rows built from the reordered contexts."""
    torch.manual_seed(1)
    model = LanguageModel(tiny_config(tokenizer.vocab_size, termination="st", termination_eps=0.05)).to(device).eval()
    contexts = [[EOS_ID, 40, 41, 42], [EOS_ID, 50, EOS_ID, 51]]  # row 1: a document break, so t differs
    with torch.inference_mode():
        rows = LanguageModelRows(model, contexts, 4)
        rows.select(torch.tensor([1, 1, 0], device=device))
        rows.advance(torch.tensor([60, 61, 62], device=device))
        fresh = LanguageModelRows(model, [contexts[1], contexts[1], contexts[0]], 4)
        fresh.advance(torch.tensor([60, 61, 62], device=device))
        assert rows.steps.tolist() == fresh.steps.tolist() == [3, 3, 5]
        torch.testing.assert_close(rows.log_probs(), fresh.log_probs(), atol=1e-5, rtol=1e-5)
        assert rows.state is not None and fresh.state is not None
        torch.testing.assert_close(rows.state, fresh.state)


def test_the_allowed_mask_restricts_two_stage_termination_heads_exactly(
    device: torch.device, tokenizer: VariorumTokenizer
) -> None:
    """With an allowed set A, the group stage is p(g | A) ∝ p(g) p(A | g), the eos group included."""
    model = build_f2_model(tokenizer, termination="nmst", termination_eps=0.1).to(device)
    head = model.head
    torch.manual_seed(0)
    hidden, steps = torch.randn(3, model.config.n_embd, device=device), torch.tensor([1, 4, 9], device=device)
    allowed = torch.zeros(3, head.vocab_size, dtype=torch.bool, device=device)
    allowed[:, 100:140] = True
    allowed[0, EOS_ID] = True  # row 0 may end, the others may not
    sampler = TokenSampler(head, DecodeConfig())
    restriction = head.allowed_group_mass(hidden, steps, allowed)
    scores = head.group_stage_scores(hidden, steps, None, lambda s: s, restriction)  # [3, G]
    joint = head.group_log_probs(hidden, steps)[:, :, None] + torch.stack(
        [head.token_log_probs_in_group(hidden, torch.full_like(steps, g), steps) for g in range(head.num_groups)], 1)
    expected = torch.logsumexp(joint.masked_fill(~allowed[:, None, :], float("-inf")), dim=-1)  # log p(g, A)
    torch.testing.assert_close(torch.log_softmax(scores, -1), torch.log_softmax(expected, -1), atol=1e-4, rtol=1e-4)
    assert scores[1:, -1].isinf().all() and bool(scores[0, -1].isfinite())  # eos group only where eos is allowed
    seeds = torch.arange(3, device=device)
    for step in range(20):
        draw = sampler.draw(hidden, steps, None, torch.zeros(3, 1, dtype=torch.long, device=device), seeds, step,
                            allowed)
        assert bool(allowed.gather(1, draw.tokens[:, None]).all())


def test_the_permgen_api_does_not_import_the_lm_api() -> None:
    code = "import sys, engine.permgen.loaded; assert 'engine.front_door' not in sys.modules, 'import cycle'"
    subprocess.run([sys.executable, "-c", code], check=True)
