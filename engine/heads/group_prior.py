"""The token-mass prior: a grouped head (F², POSG) on a pretrained base starts at the base's distribution.

F² and POSG (engine/heads/f2.py, posg.py) draw a group g with p(g | ctx) = softmax_g(h·u_g) and then a
token inside it. The papers train both stages from scratch. On a pretrained base the token stage
reuses the base's tied token embeddings, but the group layer u is new: a randomly started u spreads
p(g) evenly over the groups, and the pretrained model's loss starts twice as high as the base's
own (measured on SmolLM2: 7.4 against 3.6 nats per token) and needs most of a short run to recover.

With the prior, each group logit also gets the base's own log-mass of the group, held constant:

    p(g | ctx) = softmax_g( h·u_g + sg[ log Σ_{x ∈ V_g} exp(h·w_x) ] )        (sg: no gradient)

and u starts at zero. For F², whose classes partition V, the model then starts *exactly* at the base's
softmax: p(g)·p(x | g) = (S_g / Σ S) · (e^{z_x} / S_g) = softmax(z)_x. For POSG, whose groups overlap,
it starts at p(x) ∝ n_x · e^{z_x} (n_x: the groups holding x). Our choice, where the papers are silent
on pretrained starts: the offset has no gradient, so the trained parameters get exactly the papers'
gradients (Eq. 3 of F², Eq. 4 of POSG): the class layer learns a correction to the base's group
masses, and h learns through u and the within-group softmax as in the papers. The cost is one
token projection more wherever only the group stage was needed (eos's probability in training,
the group stage of a two-stage draw): it is computed without gradient.
"""

from __future__ import annotations

import torch


def token_mass(token_logits: torch.Tensor, membership: torch.Tensor) -> torch.Tensor:
    """log Σ_{x ∈ V_g} exp z_x per group, without gradient: token_logits [N, V], membership [G, V] (bool or
    0/1) → [N, G]. A group far below the row's top token gets the smallest normal float, never −inf."""
    with torch.no_grad():
        logits = token_logits.detach().float()
        peak = logits.amax(dim=-1, keepdim=True)  # [N, 1]
        mass = torch.exp(logits - peak) @ membership.to(logits.dtype).T  # [N, G], each ≤ |V_g|
        return torch.log(mass.clamp_min(torch.finfo(mass.dtype).tiny)) + peak
