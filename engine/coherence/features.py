"""What a language model says about a continuation after its prompt, as one feature row per pair.

For a prompt P and continuation C (the text a writer would append, leading space included) the model reads
[eos] P C and, separately, [eos] C. Per pair we keep:

- `cond` / `uncond`: mean log p of C's tokens with and without P (nats per token);
- `pmi` = cond − uncond: how much the prompt explains the continuation (a continuation of another story, or a
  generic sentence, gains little from P);
- the mean final hidden state over C's tokens read after P, and the same mean read without P: a linear map
  of these learns what a fitting ending looks like (engine/coherence/fit.py).

Prompts keep their last `max_prompt_tokens` tokens and continuations their first `max_continuation_tokens`
(both within the model's window, the continuation first), so the cost of a pair is bounded whatever the writer
selected.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from engine.heads.termination import document_steps
from engine.model import LanguageModel
from engine.tokenizer import VariorumTokenizer
from engine.torch_modes import eval_mode

SCALARS = ("cond", "uncond", "pmi")  # the first columns of a feature row, in this order


@dataclass(frozen=True)
class FeatureLimits:
    """Token budgets per pair (prompt end, continuation start) and rows per forward pass."""

    max_prompt_tokens: int = 192
    max_continuation_tokens: int = 96
    batch_size: int = 16


def feature_width(model: LanguageModel) -> int:
    """Columns of a feature row: the scalars, then two hidden means of width D."""
    return len(SCALARS) + 2 * model.config.n_embd


@torch.no_grad()
def continuation_features(
    model: LanguageModel, tokenizer: VariorumTokenizer, prompts: Sequence[str], continuations: Sequence[str],
    limits: FeatureLimits = FeatureLimits(), progress: Callable[[int], None] | None = None,
) -> torch.Tensor:
    """Feature rows [N, len(SCALARS) + 2D] of the N (prompt, continuation) pairs (see the module docstring).

    A continuation with no tokens gets cond = uncond = −inf clipped to a large negative number and zero
    hidden means: nothing was written, nothing fits."""
    if len(prompts) != len(continuations):
        raise ValueError(f"{len(prompts)} prompts for {len(continuations)} continuations")
    room = model.config.block_size - 1  # positions after the leading eos
    cont_ids = [tokenizer.encode(c)[: min(limits.max_continuation_tokens, room)] for c in continuations]
    prompt_ids = [_prompt_end(tokenizer.encode(p) if p else [], min(limits.max_prompt_tokens, room - len(c)))
                  for p, c in zip(prompts, cont_ids, strict=True)]
    with eval_mode(model):
        conditional = _read_pairs(model, tokenizer.eos_id, prompt_ids, cont_ids, limits.batch_size, progress)
        alone = _read_pairs(model, tokenizer.eos_id, [[] for _ in cont_ids], cont_ids, limits.batch_size, None)
    cond, cond_hidden = conditional
    uncond, uncond_hidden = alone
    return torch.cat([torch.stack([cond, uncond, cond - uncond], dim=1), cond_hidden, uncond_hidden], dim=1)


def _prompt_end(ids: list[int], budget: int) -> list[int]:
    """The last `budget` tokens of a prompt (none when the continuation fills the model's window)."""
    return ids[max(0, len(ids) - budget):] if budget > 0 else []


def _read_pairs(
    model: LanguageModel, eos_id: int, prompt_ids: list[list[int]], cont_ids: list[list[int]], batch_size: int,
    progress: Callable[[int], None] | None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(mean log p of each continuation [N], mean hidden over its tokens [N, D]), batched by length."""
    count, dim = len(cont_ids), model.config.n_embd
    mean_log_p = torch.full((count,), -50.0)
    mean_hidden = torch.zeros(count, dim)
    order = sorted(range(count), key=lambda i: len(prompt_ids[i]) + len(cont_ids[i]))  # little padding
    for start in range(0, count, batch_size):
        rows = [i for i in order[start : start + batch_size] if cont_ids[i]]
        if rows:
            log_p, hidden = _read_batch(model, eos_id, [prompt_ids[i] for i in rows], [cont_ids[i] for i in rows])
            mean_log_p[rows], mean_hidden[rows] = log_p, hidden
        if progress is not None:
            progress(min(start + batch_size, count))
    return mean_log_p, mean_hidden


def _read_batch(
    model: LanguageModel, eos_id: int, prompts: list[list[int]], conts: list[list[int]]
) -> tuple[torch.Tensor, torch.Tensor]:
    """One padded forward pass of [eos] + prompt + continuation rows: (mean log p [B], mean hidden [B, D])."""
    device = next(model.parameters()).device
    lengths = [1 + len(p) + len(c) for p, c in zip(prompts, conts, strict=True)]
    ids = torch.full((len(prompts), max(lengths)), eos_id, dtype=torch.long)
    is_cont = torch.zeros(ids.shape, dtype=torch.bool)  # [B, T]: positions holding a continuation token
    for row, (p, c) in enumerate(zip(prompts, conts, strict=True)):
        ids[row, 1 : lengths[row]] = torch.tensor(p + c, dtype=torch.long)
        is_cont[row, 1 + len(p) : lengths[row]] = True
    ids, is_cont = ids.to(device), is_cont.to(device)
    hidden = model.hidden_states(ids)  # [B, T, D]
    targets = torch.cat([ids[:, 1:], ids[:, -1:]], dim=1)  # position t predicts input t + 1
    predicts_cont = torch.cat([is_cont[:, 1:], torch.zeros_like(is_cont[:, :1])], dim=1)  # [B, T]
    steps = document_steps(targets, eos_id)
    nll = model.head.token_nll(hidden[predicts_cont], targets[predicts_cont], steps[predicts_cont])  # [M]
    per_row = torch.zeros(len(prompts), device=device).index_add_(0, predicts_cont.nonzero()[:, 0], nll)
    counts = is_cont.sum(dim=1).float()  # [B]
    summed = (hidden * is_cont.unsqueeze(-1)).sum(dim=1)  # [B, D]
    return (-per_row / counts).float().cpu(), (summed / counts.unsqueeze(-1)).float().cpu()
