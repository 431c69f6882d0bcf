"""Classifier-free guidance: each token weighed by how much the writer's text raises its probability.

A small model fine-tuned briefly reads its prompt (a story's title and keywords) only faintly and drifts into
what it would write after any text. Guidance (Sanchez et al., 2023, "Stay on topic with classifier-free
guidance", Eq. 7) runs the same model twice per step, once after the writer's text c and once after no text
(the *twin* rows, fed the same tokens), and samples from

    log p̂(x | y_<l, c) = log p(x | y_<l) + γ · (log p(x | y_<l, c) − log p(x | y_<l)),   γ ≥ 1,

renormalised over the vocabulary: γ = 1 is the model as trained, γ > 1 favours the tokens the text makes more
likely than they are after nothing. The paper applies it to the logits of a language model's next token; here
it acts on the head's marginal log p(x) of one decoding step, so a two-stage head (F², POSG, termination) is
guided as one distribution and sampled in one stage (its group controls are refused beside guidance,
engine/decoding/settings.py). The allowed-token masks and the token processors (temperature, top-k, top-p)
then act on the guided scores; a termination head's eos floor is applied to them as in flat sampling, so a
guided decode still ends. The recorded log-prob of a token stays the model's own log p(x | y_<l, c).

What "no text" is, per family: a language model's twin reads only the document separator (eos) before the
variant's tokens; a PermGen model's reads the source with an empty title and empty keywords, in the model's own
source form, so only the writer's words differ between the two; a PermGen paraphrase's twin reads no sentence
(the instruction alone, for a model that reads one), so guidance keeps a rewrite to the words its sentence makes
likely. Rewording (a language model's paraphrase) samples no tokens to weigh and is never guided
(`refuse_guidance`).
The twin's termination step t is the writer's rows' own, so the head's eos floor is the same in both and
guidance does not push toward eos or away from it.
"""

from __future__ import annotations

import torch

from engine.decode_fields import GUIDANCE
from engine.decoding.settings import DecodeConfig

# log-probs are clamped here before they are combined: −inf (a masked token) minus −inf would be NaN, and a
# token this unlikely under either distribution (e^-10000) is never drawn after guidance either.
LOG_FLOOR = -1.0e4


def guided_log_probs(conditioned: torch.Tensor, unconditioned: torch.Tensor, strength: float) -> torch.Tensor:
    """log p̂ [N, V] from the writer's rows' log p(x | c) and the twin's log p(x), both [N, V] (module docstring);
    `strength` is γ ≥ 1."""
    if strength < 1.0:
        raise ValueError(f"guidance must be >= 1 (1 = off), got {strength}")
    with_text, without = conditioned.clamp(min=LOG_FLOOR), unconditioned.clamp(min=LOG_FLOOR)
    return torch.log_softmax(without + strength * (with_text - without), dim=-1)


def refuse_guidance(settings: DecodeConfig) -> None:
    """ValueError when `settings` guide rewording, which picks among rewordings of the sentence (it samples no
    token to weigh)."""
    if settings.guidance != GUIDANCE.off:
        raise ValueError("guidance weighs the tokens a model samples; rewording picks among rewordings of the "
                         "sentence: leave guidance at 1")
