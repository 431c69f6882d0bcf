"""Stopping degenerate loops: a variant whose latest tokens are a few tokens over and over ends, with `FINISH_LOOP`.

Greedy or strongly biased decoding can fall into a loop that never ends on its own ("addition addition
…": NMST's floor on p(eos) is too small to end a greedy decode within any cap a writer waits for). A
variant whose last `LOOP_WINDOW` tokens hold at most `LOOP_MAX_DISTINCT` distinct tokens — one word said
64 times, an 8-token phrase said 8 times — is looping and stops there; 64 tokens of prose use ~40
distinct tokens, so writing never trips it. Counts are kept per row, so a step costs O(1) per row.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Sequence

FINISH_LOOP = "loop"
LOOP_WINDOW = 64
LOOP_MAX_DISTINCT = 8


class LoopGuard:
    """Per decoding row: the last `LOOP_WINDOW` tokens and how often each occurs among them."""

    def __init__(self, rows: int) -> None:
        self.recent: list[deque[int]] = [deque() for _ in range(rows)]
        self.counts: list[Counter[int]] = [Counter() for _ in range(rows)]

    def add(self, tokens: Sequence[int]) -> list[bool]:
        """Take one new token per row; → per row, whether its window is now a loop."""
        return [self._add(row, token) for row, token in enumerate(tokens)]

    def _add(self, row: int, token: int) -> bool:
        recent, counts = self.recent[row], self.counts[row]
        recent.append(token)
        counts[token] += 1
        if len(recent) > LOOP_WINDOW:
            old = recent.popleft()
            counts[old] -= 1
            if not counts[old]:
                del counts[old]
        return len(recent) == LOOP_WINDOW and len(counts) <= LOOP_MAX_DISTINCT

    def select(self, rows: Sequence[int]) -> None:
        """Keep rows `rows` (in that order), as the decoding rows were."""
        self.recent = [self.recent[r] for r in rows]
        self.counts = [self.counts[r] for r in rows]
