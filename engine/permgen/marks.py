"""Sentence marks and hierarchical positions of PermGen targets (paper §4.1–4.2, Fig. 2–3).

A paragraph of T sentences, written in the order π (1-based sentence indices), becomes

    ⟨B-π1⟩ s_π1 ⟨E-π1⟩ ⟨B-π2⟩ s_π2 ⟨E-π2⟩ … ⟨E-πT⟩ ⟨EOP⟩

and the decoder reads it after a start token (eos). Each decoder *input* token carries two
positions (Eq. 4): global = the index t of the sentence that holds it, local = its place inside
that sentence, ⟨B-t⟩ being 0 and ⟨E-t⟩ being len(s_t) + 1. Tokens outside every sentence (the
start token, ⟨EOP⟩) have global 0, local 0. Sentence t keeps its index t whatever its place in
π, so the same sentence is embedded the same way in every order (Fig. 2).

`mark_groups` lays out the POS groups of the same tokens (POSG head) with the same code, so a
token's tag follows it through every order. `PositionTracker` computes the positions one token at
a time (the decoder uses it), and `hierarchical_positions` runs it over a whole sequence
(training), so both agree by construction.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from engine.tokenizer import END_OF_PARAGRAPH, MAX_SENTENCES, SENTENCE_BEGIN, SENTENCE_END, SPECIAL_TOKENS

EOP_ID = SPECIAL_TOKENS.index(END_OF_PARAGRAPH)
BEGIN_IDS = [SPECIAL_TOKENS.index(token) for token in SENTENCE_BEGIN]  # BEGIN_IDS[t - 1] = ⟨B-t⟩
END_IDS = [SPECIAL_TOKENS.index(token) for token in SENTENCE_END]


class MarkError(ValueError):
    """A marked sequence or a sentence order is malformed; the message says where."""


def begin_id(t: int) -> int:
    """Token id of ⟨B-t⟩, t = 1..10."""
    _check_index(t)
    return BEGIN_IDS[t - 1]


def end_id(t: int) -> int:
    """Token id of ⟨E-t⟩, t = 1..10."""
    _check_index(t)
    return END_IDS[t - 1]


def _check_index(t: int) -> None:
    if not 1 <= t <= MAX_SENTENCES:
        raise MarkError(f"sentence index must be in 1..{MAX_SENTENCES}, got {t}")


def sentence_of_begin(token: int) -> int:
    """t if `token` is ⟨B-t⟩, else 0."""
    return BEGIN_IDS.index(token) + 1 if token in BEGIN_IDS else 0


def sentence_of_end(token: int) -> int:
    """t if `token` is ⟨E-t⟩, else 0."""
    return END_IDS.index(token) + 1 if token in END_IDS else 0


def check_order(order: Sequence[int], num_sentences: int) -> None:
    """`order` must be a permutation of 1..num_sentences."""
    if sorted(order) != list(range(1, num_sentences + 1)):
        raise MarkError(f"order {list(order)} is not a permutation of 1..{num_sentences}")


def _in_order(
    sentences: Sequence[Sequence[int]], order: Sequence[int], begin: Callable[[int], int], end: Callable[[int], int],
    last: int,
) -> list[int]:
    """begin(π1) s_π1 end(π1) … end(πT) last: the per-token layout that `mark_target` and
    `mark_groups` share, so a token and its POS group always land at the same position."""
    if not 1 <= len(sentences) <= MAX_SENTENCES:
        raise MarkError(f"a paragraph needs 1..{MAX_SENTENCES} sentences, got {len(sentences)}")
    check_order(order, len(sentences))
    row: list[int] = []
    for t in order:
        row += [begin(t), *sentences[t - 1], end(t)]
    return [*row, last]


def mark_target(sentences: Sequence[Sequence[int]], order: Sequence[int]) -> list[int]:
    """Token ids of the sentences (natural order, each a list of ids) written in `order`, with marks."""
    return _in_order(sentences, order, begin_id, end_id, EOP_ID)


def mark_groups(sentence_groups: Sequence[Sequence[int]], order: Sequence[int], mark_group: int) -> list[int]:
    """The observed POS group of every token of `mark_target(sentences, order)` (POSG training).

    `sentence_groups[t - 1]` holds one group id per token of sentence t (natural order); the groups
    move with their sentence, and the marks ⟨B-t⟩ / ⟨E-t⟩ / ⟨EOP⟩ get `mark_group` (the special
    group, as the LM pipeline gives its eos separators)."""
    return _in_order(sentence_groups, order, lambda _: mark_group, lambda _: mark_group, mark_group)


@dataclass
class PositionTracker:
    """Hierarchical position of the next decoder input token, updated token by token."""

    sentence: int = 0  # t of the sentence being written, 0 between sentences
    local: int = 0  # tokens of the current sentence fed so far

    def position(self, token: int) -> tuple[int, int]:
        """(global, local) of `token` as a decoder input, and advance the state."""
        begun = sentence_of_begin(token)
        if begun:
            self.sentence, self.local = begun, 1
            return begun, 0
        if self.sentence == 0:  # start token or ⟨EOP⟩: outside every sentence
            return 0, 0
        here = (self.sentence, self.local)
        if sentence_of_end(token) == self.sentence:
            self.sentence, self.local = 0, 0
        else:
            self.local += 1
        return here


def hierarchical_positions(decoder_input: Sequence[int]) -> tuple[list[int], list[int]]:
    """(global, local) positions of every token of a decoder input sequence."""
    tracker = PositionTracker()
    pairs = [tracker.position(token) for token in decoder_input]
    return [g for g, _ in pairs], [loc for _, loc in pairs]


def split_marked(ids: Sequence[int]) -> list[tuple[int, list[int]]]:
    """Parse ⟨B-t⟩ … ⟨E-t⟩ … ⟨EOP⟩ into [(t, sentence ids)] in generation order.

    Raises MarkError naming the position of the first problem (text outside a sentence, a
    repeated index, an unclosed sentence, a mismatched end mark, anything after ⟨EOP⟩).
    """
    pieces: list[tuple[int, list[int]]] = []
    current = 0
    body: list[int] = []
    for position, token in enumerate(ids):
        begun, ended = sentence_of_begin(token), sentence_of_end(token)
        if current == 0:
            if token == EOP_ID:
                if position != len(ids) - 1:
                    raise MarkError(f"tokens after <EOP> at position {position}")
                return pieces
            if not begun:
                raise MarkError(f"token {token} at position {position} is outside any sentence")
            if begun in {t for t, _ in pieces}:
                raise MarkError(f"sentence {begun} begins twice (position {position})")
            current, body = begun, []
        elif ended == current:
            pieces.append((current, body))
            current = 0
        elif begun or ended or token == EOP_ID:
            raise MarkError(f"mark {token} at position {position} inside sentence {current}")
        else:
            body.append(token)
    if current:
        raise MarkError(f"sentence {current} is not closed")
    return pieces


def natural_order(pieces: Sequence[tuple[int, list[int]]]) -> list[list[int]]:
    """Sentences sorted by their index (the display order, §4.3 "reorder")."""
    return [body for _, body in sorted(pieces, key=lambda piece: piece[0])]
