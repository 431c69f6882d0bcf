"""Beam search inside a sentence (paper §4.3 step 3 allows any token decoder there).

Within sentence t the candidates are V ∪ {⟨E-t⟩} (§4.3); a hypothesis is scored by the sum of its
log-probs under the model's distribution *restricted to that set and renormalised*, the same
distribution the samplers draw from (engine/permgen/sampling.py), so beam width 1 is exactly
greedy decoding. Search rule (as the NMST beam, engine/decoding/termination.py, Appendix A.3):
every alive hypothesis expands its `width` best tokens; of all expansions the best
(width − |finished|) are kept; a kept one ending in ⟨E-t⟩ is finished and not expanded; the search
stops when `width` are finished or none is alive. At the per-sentence cap only ⟨E-t⟩ is allowed,
so every search ends within cap + 1 steps. Finished hypotheses are ranked by summed score (no
length normalisation; ties → the one finished first).

Beam scores use the token's log-prob from the head's marginal p(x); for a two-stage head (F²,
POSG) this is the marginal beam, so width 1 equals greedy with `flat_sampling`, and sampling
controls (temperature, top-k, top-p, repetition penalty, group controls) do not apply to beams.
Each token also keeps its *unrestricted* marginal log-prob, which Eq. 8 ranking uses.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from engine.decoding.processors import NEG_INF
from engine.permgen.marks import end_id
from engine.permgen.model import PermGenModel
from engine.tokenizer import SPECIAL_TOKENS

FIRST_WORD_ID = len(SPECIAL_TOKENS)  # ids below are special tokens, never sentence words


@dataclass
class Hypothesis:
    """A sentence being searched: words then ⟨E-t⟩ once finished."""

    tokens: list[int] = field(default_factory=list)
    log_probs: list[float] = field(default_factory=list)  # unrestricted marginal log p per token (Eq. 8)
    score: float = 0.0  # Σ restricted, renormalised log-probs (the beam's ranking)


class DecoderRows:
    """Incremental decoding of R rows that share one encoded source; rows can be reordered / copied."""

    def __init__(self, model: PermGenModel, encoder_states: torch.Tensor) -> None:  # states [1, S, D]
        self.model = model
        self.encoder_states = encoder_states
        self.past = model.backbone.new_cache()

    @property
    def length(self) -> int:
        """Decoder inputs fed so far (the same for every row)."""
        return int(self.past.get_seq_length())

    def feed(self, tokens: torch.Tensor, sentence: int, local_start: int) -> torch.Tensor:
        """Feed tokens [R, T] of sentence `sentence` at local positions local_start.. → last hidden [R, D]."""
        rows, width = tokens.shape
        locals_ = torch.arange(local_start, local_start + width, device=tokens.device).expand(rows, -1)
        sentences = torch.full_like(tokens, sentence)
        states = self.encoder_states.expand(rows, -1, -1)
        mask = torch.ones(rows, states.shape[1], dtype=torch.bool, device=tokens.device)
        hidden: torch.Tensor = self.model.backbone.decoder(tokens, sentences, locals_, states, mask, past=self.past)
        return hidden[:, -1]

    def select(self, index: torch.Tensor) -> None:
        """Keep rows `index` [R'] (any order, repeats allowed)."""
        self.past.reorder_cache(index.long())  # type: ignore[arg-type]  # typed as the legacy LongTensor

    def truncate(self, length: int) -> None:
        """Forget the decoder inputs after the first `length`."""
        if self.length > length:
            self.past.crop(length - self.length)  # transformers 5: a negative count of tokens to drop


def sentence_beam(
    rows: DecoderRows,
    hidden: torch.Tensor,  # [1, D]: after ⟨B-t⟩
    sentence: int,
    first_step: int,  # the decoding step of the sentence's first word (the head's `steps`)
    width: int,
    cap: int,
    should_stop: Callable[[], bool],
) -> list[Hypothesis] | None:
    """Finished hypotheses of sentence `sentence`, best first; None when cancelled.

    `rows` must hold one row on entry; it is left holding the search's last rows.
    """
    if width < 1 or cap < 0:
        raise ValueError(f"beam width must be >= 1 and the sentence cap >= 0, got {width}, {cap}")
    head, end = rows.model.head, end_id(sentence)
    alive, finished = [Hypothesis()], list[Hypothesis]()
    for length in range(cap + 1):
        if should_stop():
            return None
        steps = torch.full((len(alive),), first_step + length, device=hidden.device)
        marginal = head.log_probs(hidden, steps).float()  # [R, V]
        allowed = torch.zeros_like(marginal, dtype=torch.bool)
        allowed[:, end] = True
        if length < cap:
            allowed[:, FIRST_WORD_ID:] = True
        restricted = torch.log_softmax(marginal.masked_fill(~allowed, NEG_INF), dim=-1)  # [R, V]
        totals = torch.tensor([h.score for h in alive], device=hidden.device)[:, None] + restricted
        expand = min(width, totals.shape[1])
        best, tokens = totals.topk(expand, dim=-1)  # [R, width] each
        order = sorted(((float(best[r, j]), r, int(tokens[r, j])) for r in range(len(alive)) for j in range(expand)),
                       key=lambda c: -c[0])  # stable: ties keep row order
        kept = [c for c in order if c[0] > NEG_INF / 2][: width - len(finished)]
        grown = [Hypothesis([*alive[r].tokens, tok], [*alive[r].log_probs, float(marginal[r, tok])], score)
                 for score, r, tok in kept]
        finished += [h for h in grown if h.tokens[-1] == end]
        sources = [r for (_, r, tok) in kept if tok != end]
        alive = [h for h in grown if h.tokens[-1] != end]
        if len(finished) >= width or not alive:
            break
        rows.select(torch.tensor(sources, device=hidden.device))
        hidden = rows.feed(torch.tensor([[h.tokens[-1]] for h in alive], device=hidden.device), sentence, length + 1)
    return sorted(finished, key=lambda h: -h.score)
