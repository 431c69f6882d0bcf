"""Choose N rewordings of a sentence: the changes of engine/rewording/ (edits.py, phrasing.py, orders.py,
constructions.py), judged by a language model.

This is lexical-substitution paraphrasing ranked by a language model's fluency, the scoring idea of
unsupervised paraphrasing by search (Liu et al. 2020, "Unsupervised Paraphrasing by Simulated
Annealing", whose objective weighs fluency by a language model, keeping the meaning, and differing
from the source). Here meaning is kept by construction (first-sense synonyms, fixed phrases, changes
of word order and of construction that keep the content words) and the model only says which
rewrites read as English:

1. Every single change is scored alone: Δ = NLL(rewrite) − NLL(source), the summed token NLL of
   the whole sentence under the model, each after an end-of-text token; the source is scored as
   rewrites are written (a tokenized "sick ." as "sick."), so spacing alone never counts. A word edit is kept when
   Δ ≤ `change_margin` nats, a change of order or construction (a clause move, "gave a hug to his
   mom", passive to active) when Δ ≤ `move_margin`: the model finds it not much less likely than
   the writer's wording. (A model trained on stories finds "Because …" openings rare, so such a
   change gets more room; it keeps the content words.)
2. `COMBINATIONS` random rewrites are drawn from the kept changes (a word order, then each kept word
   edit with probability ½), seeded; the distinct ones other than the source are scored and kept
   when Δ ≤ `change_margin` + `margin_per_change` × (word edits + moves − 1).
3. N of them are picked without replacement by the Gumbel-top-k trick with keys −Δ / temperature +
   Gumbel noise (from the seed), so a lower temperature picks the most fluent, a higher one varies more.

Fewer than N rewrites come back when the sentence allows fewer (the caller keeps the writer's
sentence for the rest), and none for a sentence longer than the model's window, which it cannot
score whole. The margins are our choice, set by reading rewrites of held-out story
sentences (docs/paraphrase.md), not from the paper.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from engine.model import IGNORE_INDEX, LanguageModel
from engine.rewording.constructions import active_voice, appositive_clauses
from engine.rewording.edits import Rewrite, WordEdit, clause_moves, conjunct_swaps, non_overlapping, word_edits
from engine.rewording.orders import word_order_changes
from engine.rewording.phrasing import phrasing_edits
from engine.rewording.wordnet import WordNet
from engine.tokenizer import VariorumTokenizer
from engine.torch_modes import eval_mode

COMBINATIONS = 48
SCORE_BATCH = 32


@dataclass(frozen=True)
class ScoredText:
    """A text, its tokens and each token's log-probability under the model (the end-of-text token's last)."""

    text: str
    token_ids: list[int]
    log_probs: list[float]

    @property
    def nll(self) -> float:
        return -sum(self.log_probs)


class SentenceScorer:
    """Summed token NLL of whole sentences under a language model, in batches."""

    def __init__(self, model: LanguageModel, tokenizer: VariorumTokenizer) -> None:
        self.model, self.tokenizer = model, tokenizer

    def fits(self, text: str) -> bool:
        """True when the text and its end-of-text token fit the model's window (it is scored whole)."""
        return len(self.tokenizer.encode(text)) < self.model.config.block_size

    @torch.no_grad()
    def score(self, texts: Sequence[str]) -> list[ScoredText]:
        scored: list[ScoredText] = []
        for start in range(0, len(texts), SCORE_BATCH):
            scored += self._batch(texts[start:start + SCORE_BATCH])
        return scored

    def _batch(self, texts: Sequence[str]) -> list[ScoredText]:
        eos = self.tokenizer.eos_id
        encoded = [self.tokenizer.encode(text) for text in texts]
        if max(map(len, encoded)) >= self.model.config.block_size:
            raise ValueError("a text to score is longer than the model's window; check `fits` first")
        length = max(len(ids) for ids in encoded) + 1
        inputs = torch.full((len(texts), length), eos)  # [B, T]: eos, then the text
        targets = torch.full((len(texts), length), IGNORE_INDEX)  # [B, T]: the text, then eos
        for row, ids in enumerate(encoded):
            inputs[row, 1:len(ids) + 1] = torch.tensor(ids, dtype=torch.long)
            targets[row, :len(ids) + 1] = torch.tensor([*ids, eos], dtype=torch.long)
        device = next(self.model.parameters()).device
        with eval_mode(self.model):
            hidden = self.model.hidden_states(inputs.to(device))  # [B, T, D]
            nll = self.model.token_nll(hidden, targets.to(device)).float().cpu()  # [B, T]
        return [ScoredText(text, ids, (-nll[row, :len(ids) + 1]).tolist())
                for row, (text, ids) in enumerate(zip(texts, encoded, strict=True))]


@dataclass(frozen=True)
class RewordSettings:
    """How far a rewrite may fall below the writer's sentence in log-likelihood, and how freely N are picked."""

    change_margin: float = 5.0  # nats, for one word edit
    margin_per_change: float = 3.0  # nats more for each further change
    move_margin: float = 10.0  # nats, for a change of order or construction alone: it keeps the content words
    temperature: float = 1.0

    def __post_init__(self) -> None:
        if min(self.change_margin, self.margin_per_change, self.move_margin) < 0:
            raise ValueError("the rewording margins must be ≥ 0 nats")
        if not self.temperature > 0:
            raise ValueError(f"temperature must be > 0, got {self.temperature}")

    def limit(self, edits: int, moved: bool) -> float:
        """The most a rewrite with `edits` word edits, and a clause move if `moved`, may lose in log-likelihood."""
        if edits == 0:
            return self.move_margin
        return self.change_margin + self.margin_per_change * (edits + moved - 1)


class Rewording:
    """N rewordings of a sentence (see the module docstring)."""

    def __init__(self, scorer: SentenceScorer, wordnet: WordNet, parse: Callable[[str], Any],
                 settings: RewordSettings | None = None) -> None:
        self.scorer, self.wordnet, self.parse = scorer, wordnet, parse
        self.settings = settings or RewordSettings()

    def rewrites(self, sentence: str, n: int, seed: int) -> list[ScoredText]:
        """Up to `n` distinct rewordings of `sentence`, the picks of one seeded draw."""
        if not self.scorer.fits(sentence):
            return []  # longer than the model's window: it cannot judge a rewrite of it
        if split_at_an_initial(sentence):
            return []
        doc = self.parse(sentence)
        identity: tuple[int | str, ...] = tuple(token.i for token in doc)
        unchanged = Rewrite(doc, identity).text  # the sentence as rewrites are written (" ," → ",")
        source = self.scorer.score([unchanged])[0]
        edits = word_edits(doc, self.wordnet) + phrasing_edits(doc)
        singles = [Rewrite(doc, identity, (edit,)) for edit in edits]
        orders = clause_moves(doc) + conjunct_swaps(doc) + word_order_changes(doc, self.wordnet)
        orders += active_voice(doc) + appositive_clauses(doc, self.wordnet)
        singles += [Rewrite(doc, order) for order in orders]
        kept = self._within(singles, source)
        combined = self._combinations([rewrite for rewrite, _ in kept], identity, seed)
        found = {scored.text: scored for _, scored in kept}
        found.update({scored.text: scored for _, scored in self._within(combined, source)})
        found.pop(sentence, None)
        found.pop(unchanged, None)
        return self._pick(list(found.values()), source, n, seed)

    def _within(self, rewrites: Sequence[Rewrite], source: ScoredText) -> list[tuple[Rewrite, ScoredText]]:
        """The rewrites the model finds within their margin, with their scores."""
        rewrites = [rewrite for rewrite in rewrites if self.scorer.fits(rewrite.text)]
        scored = self.scorer.score([rewrite.text for rewrite in rewrites]) if rewrites else []
        return [(rewrite, s) for rewrite, s in zip(rewrites, scored, strict=True)
                if s.nll - source.nll <= self.settings.limit(len(rewrite.edits), rewrite.moved)]

    def _combinations(self, kept: Sequence[Rewrite], identity: tuple[int | str, ...], seed: int) -> list[Rewrite]:
        """Distinct random rewrites of two or more kept changes."""
        if not kept:
            return []
        doc = kept[0].doc
        orders = [identity, *{r.order for r in kept if r.order != identity}]
        edits = [r.edits[0] for r in kept if r.edits]
        rng = random.Random(seed)
        drawn: dict[tuple[tuple[int | str, ...], tuple[WordEdit, ...]], Rewrite] = {}
        for _ in range(COMBINATIONS):
            order = rng.choice(orders)
            chosen: list[WordEdit] = []
            for edit in edits:
                if rng.random() < 0.5 and non_overlapping([*chosen, edit]):
                    chosen.append(edit)
            picked = tuple(sorted(chosen, key=lambda e: e.index))
            if len(picked) + (order != identity) >= 2:
                drawn[(order, picked)] = Rewrite(doc, order, picked)
        return list(drawn.values())

    def _pick(self, found: list[ScoredText], source: ScoredText, n: int, seed: int) -> list[ScoredText]:
        """`n` of `found` without replacement, by Gumbel-top-k on −Δ / temperature (step 3 of the module docstring)."""
        rng = random.Random(seed ^ 0x5EED)
        temperature = self.settings.temperature

        def key(scored: ScoredText) -> float:
            gumbel = -math.log(-math.log(rng.random() or 1e-12) or 1e-12)
            return -(scored.nll - source.nll) / temperature + gumbel

        found.sort(key=lambda s: s.text)  # a fixed order before the seeded keys
        keyed = [(key(scored), scored) for scored in found]
        return [scored for _, scored in sorted(keyed, key=lambda pair: -pair[0])[:n]]


INITIAL_AT_END = re.compile(r"(?<![\w'])([A-Z])\s*\.\s*$")  # "… by Stephen P." / "… by Stephen P ."
INITIAL_AT_START = re.compile(r"^\s*[A-Z]\s*\.\s")  # "S. Marine pilots …"


def split_at_an_initial(sentence: str) -> bool:
    """True when `sentence` looks like part of a sentence that was split after a name's initial: it ends on a
    lone capital letter and a full stop ("It was discovered by Stephen P.", but not "So did I.") or opens with
    one ("S. Marine pilots …"). Its parse is not of a sentence, so it is kept as written; so is the piece after
    it (engine/rewording/stream.py)."""
    end = INITIAL_AT_END.search(sentence)
    return bool(end and end.group(1) not in ("I", "A")) or bool(INITIAL_AT_START.match(sentence))
