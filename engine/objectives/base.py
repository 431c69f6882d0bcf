"""The training-objective interface, the MLE objective, and the module the trainer wraps in DDP.

An objective turns a batch into a scalar loss. It runs on the backbone's hidden states and
the head (`token_losses`), so objectives can be stacked (token-level unlikelihood on top of
MLE or AGG) without running the backbone twice. `begin_step` is called once per optimizer
step, before any micro-batch, with this rank's targets of the whole step: objectives that
keep statistics (AGG's token counter memory) update them there.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable

import torch
from torch import nn

from engine.config import ConfigError
from engine.model import IGNORE_INDEX, LanguageModel
from engine.tokenizer import EOS, SPECIAL_TOKENS


def positions(targets: torch.Tensor) -> torch.Tensor:
    """Termination step t of every position, 1-based, as `LanguageModel.token_nll` uses: [B, T].

    With the termination heads t restarts after each eos (their `document_steps`);
    without that module every head ignores t and the plain position count is used.
    """
    try:
        from engine.heads.termination import document_steps
    except ImportError:
        batch, length = targets.shape
        return torch.arange(1, length + 1, device=targets.device).expand(batch, length)
    steps: torch.Tensor = document_steps(targets, SPECIAL_TOKENS.index(EOS))
    return steps


class Objective(ABC):
    """A training loss over (input_ids [B, T], targets [B, T]); see the module docstring."""

    name = "abstract"

    def begin_step(self, step: int, targets: torch.Tensor) -> None:  # noqa: B027 (optional hook)
        """Called once per optimizer step with this rank's targets [b, T] of the step."""

    def restore(self, step: int, global_targets: Callable[[int], torch.Tensor]) -> None:  # noqa: B027
        """On resume at `step`; `global_targets(s)` gives the whole global batch's targets of step s."""

    def check_model(self, model: LanguageModel) -> None:  # noqa: B027 (optional hook)
        """Before training: a ConfigError if this objective cannot act on `model` as it will be trained
        (what `trainable` left frozen)."""

    @abstractmethod
    def token_losses(
        self, model: LanguageModel, hidden: torch.Tensor, input_ids: torch.Tensor, targets: torch.Tensor
    ) -> torch.Tensor:
        """Per-position loss [B, T] from hidden [B, T, D]; 0 at IGNORE_INDEX targets."""

    def loss(self, model: LanguageModel, input_ids: torch.Tensor, targets: torch.Tensor,
             *extra: torch.Tensor) -> torch.Tensor:
        """Mean of `token_losses` over the non-ignored targets (the scalar to backpropagate).

        `extra` are further per-position inputs the trainer may pass to the model (POSG's
        observed groups); only MLE forwards them, other objectives refuse them.
        """
        if extra:
            raise ConfigError(f"objective {self.name!r} does not take extra training inputs (e.g. POSG groups)")
        hidden = model.hidden_states(input_ids)  # [B, T, D]
        per_token = self.token_losses(model, hidden, input_ids, targets)
        mask = targets != IGNORE_INDEX
        return per_token.sum() / mask.sum().clamp(min=1)


class MleObjective(Objective):
    """Maximum likelihood: the head's own token NLL (same numbers as `LanguageModel.forward`)."""

    name = "mle"

    def token_losses(
        self, model: LanguageModel, hidden: torch.Tensor, input_ids: torch.Tensor, targets: torch.Tensor
    ) -> torch.Tensor:
        return model.token_nll(hidden, targets)

    def loss(self, model: LanguageModel, input_ids: torch.Tensor, targets: torch.Tensor,
             *extra: torch.Tensor) -> torch.Tensor:
        """Exactly the model's own loss, extra inputs (e.g. POSG's observed groups) included."""
        loss: torch.Tensor = model(input_ids, targets, *extra)
        return loss


class ObjectiveModule(nn.Module):
    """`model` + objective as one module, so DDP's forward (and its gradient hooks) see the loss.

    The objective holds no parameters or buffers (so DDP neither syncs nor broadcasts its state;
    AGG's counts are all-reduced explicitly).
    """

    def __init__(self, model: LanguageModel, objective: Objective) -> None:
        super().__init__()
        self.model = model
        self.objective = objective

    def forward(self, input_ids: torch.Tensor, targets: torch.Tensor, *extra: torch.Tensor) -> torch.Tensor:
        return self.objective.loss(self.model, input_ids, targets, *extra)
