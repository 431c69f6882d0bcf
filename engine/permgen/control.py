"""The writer's sentence-order control and which marks may come next (paper §4.3 step 2).

- `order=()` — the model's choice: the first ⟨B-t⟩ of the N candidates is drawn *without
  replacement* from the model's p(⟨B-t⟩ | X) (footnote 1: candidates start at different sentences;
  with N > T a new round starts once every index was used), then each next mark is the most
  likely allowed one ("the model only chooses the most likely sentence index", §4.3).
- `order=(k,)` — every candidate starts with sentence k, then as above.
- `order=(π1, …, πT)` — the full order, followed exactly.

Sentence count. `num_sentences=None` is the paper's setting: indices up to T_max = 10, and ⟨EOP⟩
may be chosen once at least one sentence is written. A writer's `num_sentences = T` is taken as
the exact count asked for: marks are limited to ⟨B-1..T⟩, ⟨EOP⟩ is masked until all T are
written, then it is the only choice. Either way a paragraph has at most T_max sentences, each
index at most once, and always ends with ⟨EOP⟩.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from engine.loaded_model import check_sentence_plan
from engine.permgen.marks import EOP_ID, begin_id
from engine.tokenizer import MAX_SENTENCES


@dataclass(frozen=True)
class OrderControl:
    """How many sentences, in which order; see the module docstring."""

    num_sentences: int | None = None
    order: tuple[int, ...] = ()
    distinct_starts: bool = True  # False: the first mark is the most likely one, like every other

    def __post_init__(self) -> None:
        check_sentence_plan(self.num_sentences, self.order)

    @property
    def limit(self) -> int:
        """The largest sentence index that may be written."""
        return self.num_sentences if self.num_sentences is not None else MAX_SENTENCES

    @property
    def first(self) -> int:
        """The user's first sentence, 0 when the model chooses."""
        return self.order[0] if self.order else 0

    def allowed_marks(self, used: Sequence[int]) -> list[int]:
        """Token ids that may come next after the sentences `used` (in generation order)."""
        if len(self.order) > 1:
            return [begin_id(self.order[len(used)])] if len(used) < len(self.order) else [EOP_ID]
        if not used and self.order:
            return [begin_id(self.order[0])]
        unused = [begin_id(t) for t in range(1, self.limit + 1) if t not in used]
        eop_ok = len(used) == self.limit if self.num_sentences is not None else len(used) >= 1
        return [*unused, EOP_ID] if eop_ok or not unused else unused
