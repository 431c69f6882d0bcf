"""The step interface every decoder drives: N rows that advance one token at a time.

A `DecodeRows` holds, for each of its N rows, the last hidden state [N, D], the termination step
t of the next token [N] and the head's decoding state (ST's running log(1 − α), engine/heads/
base.py), plus the model's own cache. Decoders (the streams of engine/decoding/generate.py and
engine/permgen/, the beam search of engine/decoding/beam.py) only ever:

- read `hidden`, `steps`, `state` and `log_probs()` (the head's marginal of this step);
- `advance(tokens)`: feed one token per row → the next hidden [N, D] (the head state moves on
  from the step that drew the token, t grows by one);
- `select(rows)`: keep rows [M] in any order, repeats allowed (beams): cache, hidden, t and head
  state move together, so no decoder can reorder one without the others.
- `drop_ended(active)`: on the CPU, the streams' way to stop computing rows whose output ended.

Two families implement it: `LanguageModelRows` here (a preallocated KV cache, a sliding window
when the cache is full) and `PermGenRows` (engine/permgen/rows.py: encoder states, hierarchical
positions per row). The LM rows run their backbone through a *runner*, any object with
`new_cache(n)` and `decode(ids, cache) -> hidden [N, W, D]`; the torch model is the default,
another runtime (e.g. ONNX) plugs in there.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

import torch

from engine.decoding.backbone_runner import BackboneRunner
from engine.heads.base import HeadState, OutputHead, select_state
from engine.heads.termination import context_steps, prompt_start_step
from engine.model import EOS_ID, LanguageModel


class DecodeRows(ABC):
    """N decoding rows; see the module docstring. Subclasses feed tokens and move their cache."""

    def __init__(self, head: OutputHead, hidden: torch.Tensor, steps: torch.Tensor, state: HeadState) -> None:
        self.head = head
        self.hidden = hidden  # [N, D] last hidden state of each row
        self.steps = steps  # [N] termination step t of each row's next token
        self.state = state  # the head's decoding state, or None

    @property
    def rows(self) -> int:
        return int(self.hidden.shape[0])

    def log_probs(self) -> torch.Tensor:
        """The head's marginal log p(x) of every row's next token → [N, V]."""
        return self.head.decode_log_probs(self.hidden, self.steps, self.state)

    def advance(self, tokens: torch.Tensor) -> torch.Tensor:
        """Feed one token per row [N] → the next hidden [N, D]."""
        self.state = self.head.next_state(self.hidden, self.steps, self.state)
        self.steps = self.steps + 1
        self.hidden = self._feed(tokens)
        return self.hidden

    def select(self, rows: torch.Tensor) -> None:
        """Keep rows `rows` [M] (on the model's device; any order, repeats allowed)."""
        self.hidden, self.steps = self.hidden[rows], self.steps[rows]
        self.state = select_state(self.state, rows)
        self._select(rows)

    def drop_ended(self, active: torch.Tensor) -> torch.Tensor | None:
        """On the CPU, keep only the rows whose `active` [N] is True → the kept rows [M], or None when
        every row stays. Each row adds to a CPU step's time (its attention, the head's projection and
        softmax, the top-p sort, the draw), so the streams drop the rows whose output has ended; on a
        GPU a step's time hardly depends on its rows, and a new row count would need a new recorded
        step (engine/decoding/graphed_step.py), so rows stay there."""
        if self.hidden.device.type != "cpu" or bool(active.all()):
            return None
        kept = active.nonzero()[:, 0]
        self.select(kept)
        return kept

    @abstractmethod
    def _feed(self, tokens: torch.Tensor) -> torch.Tensor:
        """Run the model one token further for tokens [N] → hidden [N, D]."""

    @abstractmethod
    def _select(self, rows: torch.Tensor) -> None:
        """Keep the cache's (and any other per-row state's) rows `rows`."""


class LanguageModelRows(DecodeRows):
    """Rows of a decoder-only LM continuing equal-length contexts [eos, *prompt] (already cut to the window).

    Every row's ids are kept in one preallocated [N, P + capacity] tensor (`ids` shows the filled
    part, for repetition penalties). When the KV cache is full, the window slides: its last
    half-block is re-encoded. t counts the tokens of the current document, prompt included
    (engine/heads/termination.py)."""

    def __init__(
        self, model: LanguageModel, contexts: Sequence[Sequence[int]], capacity: int,
        runner: BackboneRunner[Any] | None = None,
    ) -> None:
        self.model = model
        self.runner: BackboneRunner[Any] = runner if runner is not None else model
        self.block = model.config.block_size
        device = next(model.parameters()).device
        prompt_length = len(contexts[0])
        self.history = torch.zeros((len(contexts), prompt_length + capacity), dtype=torch.long, device=device)
        self.history[:, :prompt_length] = torch.tensor([list(c) for c in contexts], device=device)
        self.length = prompt_length
        self.cache = self.runner.new_cache(len(contexts), prompt_length + capacity)  # no more than the request needs
        context = self._encode()  # [N, W, D]
        window_steps = context_steps(self.ids, EOS_ID)[:, -context.shape[1]:]  # [N, W]
        steps = torch.tensor([prompt_start_step(list(c), EOS_ID) + 1 for c in contexts], device=device)
        super().__init__(model.head, context[:, -1], steps, model.head.initial_state(context, window_steps))

    @property
    def ids(self) -> torch.Tensor:
        """Every row's ids so far [N, T]."""
        return self.history[:, : self.length]

    def _encode(self) -> torch.Tensor:
        """Encode the ids (their last half-block if longer than the block) into the emptied cache → [N, W, D]."""
        ids = self.ids
        if ids.shape[1] > self.block:
            ids = ids[:, -(self.block // 2):]
        self.cache.length = 0
        return self.runner.decode(ids, self.cache)

    def _feed(self, tokens: torch.Tensor) -> torch.Tensor:
        self.history[:, self.length] = tokens
        self.length += 1
        if self.cache.length < self.cache.capacity:
            return self.runner.decode(tokens[:, None], self.cache)[:, -1]
        return self._encode()[:, -1]  # the window is full: re-encode its last half (a sliding window)

    def _select(self, rows: torch.Tensor) -> None:
        self.history = self.history[rows]
        self.cache.select_rows(rows)
