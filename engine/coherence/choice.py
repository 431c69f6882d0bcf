"""Which coherence scorer chooses among drafts: the shipped one where its base is installed, else the
generating model's own pointwise mutual information.

The shipped scorer (resources/scorers/coherence-smollm2) reads the pretrained base, found where
`variorum get-base` installs it or beside the bundled models; it is loaded once per process and device and
shared by every model. Without the base, a language model scores its own drafts by how much the prompt
raises their likelihood (the `pmi` feature alone, engine/coherence/features.py); a model that is not a
language model (PermGen) has no such score, and its drafts are chosen for differing and not repeating
sentences only. `note` says which applies, in a writer's words.
"""

from __future__ import annotations

import functools
from pathlib import Path

import torch

from engine.base_model import default_models_dir, get_base_hint
from engine.coherence.features import SCALARS, FeatureLimits, feature_width
from engine.coherence.fit import LinearScore
from engine.coherence.scorer import (
    CoherenceScorer,
    ScorerRecord,
    ScorerUnavailableError,
    load_scorer,
    share_equal_weights,
)
from engine.model import LanguageModel
from engine.selection.stream import ScorerChoice
from engine.tokenizer import VariorumTokenizer

RESOURCES = Path(__file__).resolve().parent.parent.parent / "resources"
SHIPPED_SCORER = RESOURCES / "scorers" / "coherence-smollm2"


@functools.lru_cache(maxsize=2)
def _shipped(folder: Path, device: str) -> CoherenceScorer | ScorerUnavailableError:
    if not folder.is_dir():
        return ScorerUnavailableError(f"no coherence scorer is installed ({folder} is missing)")
    try:
        return load_scorer(folder, [default_models_dir(), RESOURCES / "models"], device)
    except ScorerUnavailableError as error:
        return error


def pmi_scorer(model: LanguageModel, tokenizer: VariorumTokenizer) -> CoherenceScorer:
    """A scorer that is the model's own pmi: mean log p(draft | prompt) − mean log p(draft), per token."""
    width = feature_width(model)
    weights = torch.zeros(width)
    weights[SCALARS.index("pmi")] = 1.0
    score = LinearScore(torch.zeros(width), torch.ones(width), weights)
    return CoherenceScorer(model, tokenizer, score, ScorerRecord("(the generating model)", "", FeatureLimits(), {}))


def choose_scorer(own: tuple[LanguageModel, VariorumTokenizer] | None, device: torch.device,
                  folder: Path | None = None) -> ScorerChoice:
    """The scorer of `folder` (default: the shipped one) when it loads, else `own` model's pmi, else none (see
    the module docstring)."""
    shipped = _shipped(folder or SHIPPED_SCORER, str(device))
    if isinstance(shipped, CoherenceScorer):
        if own is not None:  # a model adapted from the base keeps most of its weights: hold them once
            share_equal_weights(shipped.model, own[0])
        return ScorerChoice(shipped, "drafts chosen by the coherence scorer on the pretrained base")
    why = f"{shipped}; {get_base_hint()}"
    if own is not None:
        return ScorerChoice(pmi_scorer(*own), f"drafts chosen by this model's own sense of fit ({why})")
    return ScorerChoice(None, f"drafts chosen only for differing from each other ({why})")
