"""POS vocabularies V_ρ for the POSG head (POSG paper §4): which tokens each POS group holds.

Built from the **training split only** (the authors built theirs over train+valid+test): V_ρ is the
set of token ids seen with tag ρ in the tagged training text, so a token may belong to several V_ρ
("run" as NN and VB). Two groups are ours, not the paper's:

- `SPECIAL_GROUP` holds every special token (eos, pad, sentence marks, ⟨EOP⟩) and nothing else, and
  special tokens belong to no other group, whatever the tagger said about them. The eos separators
  between training documents are targets of this group.
- `UNSEEN_GROUP` holds the non-special tokens never seen in the training text (e.g. byte pieces of
  characters the corpus lacks). The paper gives such tokens probability 0, which makes the
  perplexity of any held-out text that uses them infinite; here they get a small learned probability
  instead: the group is never a training target, so training pushes p(UNSEEN) down but not to 0.
  The group exists only when some token is unseen.

Group order (= group id): the PTB tags seen in training in `PTB_TAGS` order, then any other labels
the tagger produced (sorted), then SPECIAL_GROUP, then UNSEEN_GROUP. Saved in a bundle as
`pos_vocab.json`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from engine.pos.tags import PTB_TAGS, coarse_group_of

SPECIAL_GROUP = "<special>"
UNSEEN_GROUP = "<unseen>"
POS_VOCAB_FILE = "pos_vocab.json"
POS_VOCAB_FORMAT = 1


class PosVocabularyError(ValueError):
    """A POS vocabulary is malformed or does not fit the model/tokenizer it is used with."""


@dataclass(frozen=True)
class PosVocabulary:
    """Group names and, for every token id, the ids of the groups it belongs to."""

    tags: tuple[str, ...]
    token_tags: tuple[tuple[int, ...], ...]  # token id → sorted group ids (never empty)

    def __post_init__(self) -> None:
        if len(set(self.tags)) != len(self.tags) or not self.tags:
            raise PosVocabularyError(f"POS group names must be unique and non-empty, got {list(self.tags)}")
        for token, groups in enumerate(self.token_tags):
            if not groups or any(not 0 <= g < len(self.tags) for g in groups):
                raise PosVocabularyError(f"token {token} has group ids {list(groups)}; need 1+ ids < {len(self.tags)}")
        empty = [self.tags[g] for g in range(len(self.tags)) if not self.group_sizes()[g]]
        if empty:
            raise PosVocabularyError(f"POS groups with no tokens: {empty}")

    @property
    def vocab_size(self) -> int:
        """|V|, the number of token ids covered."""
        return len(self.token_tags)

    @property
    def num_groups(self) -> int:
        """|P|, the number of POS groups (tags + our special / unseen groups)."""
        return len(self.tags)

    def group_sizes(self) -> list[int]:
        """|V_ρ| for each group."""
        sizes = [0] * len(self.tags)
        for groups in self.token_tags:
            for g in groups:
                sizes[g] += 1
        return sizes

    def membership(self) -> torch.Tensor:
        """Bool [P, V]: entry [ρ, x] is True iff token x ∈ V_ρ."""
        mask = torch.zeros(len(self.tags), len(self.token_tags), dtype=torch.bool)
        for token, groups in enumerate(self.token_tags):
            mask[list(groups), token] = True
        return mask

    def to_json(self) -> str:
        """The `pos_vocab.json` text: tag set, coarse group of each tag, token → group ids."""
        data = {
            "format": POS_VOCAB_FORMAT,
            "tags": list(self.tags),
            "coarse_groups": {tag: coarse_group_of(tag) for tag in self.tags if tag in PTB_TAGS},
            "special_group": SPECIAL_GROUP,
            "unseen_group": UNSEEN_GROUP,
            "token_tags": [list(groups) for groups in self.token_tags],
        }
        return json.dumps(data, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> PosVocabulary:
        """Parse `to_json` output; raises PosVocabularyError naming what is wrong."""
        try:
            data: Any = json.loads(text)
            if data.get("format") != POS_VOCAB_FORMAT:
                raise PosVocabularyError(f"unsupported pos_vocab format {data.get('format')!r}")
            return cls(tuple(data["tags"]), tuple(tuple(int(g) for g in t) for t in data["token_tags"]))
        except (json.JSONDecodeError, KeyError, TypeError, AttributeError, ValueError) as error:
            if isinstance(error, PosVocabularyError):
                raise
            raise PosVocabularyError(f"malformed POS vocabulary ({error})") from None

    @classmethod
    def from_membership(cls, tags: Sequence[str], mask: torch.Tensor) -> PosVocabulary:
        """Inverse of `membership` (used to export a trained head's vocabulary)."""
        columns = mask.t().cpu()  # [V, P]
        token_tags = tuple(tuple(int(g) for g in row.nonzero()[:, 0].tolist()) for row in columns)
        return cls(tuple(tags), token_tags)

    def save(self, path: Path) -> None:
        Path(path).write_text(self.to_json())

    @classmethod
    def load(cls, path: Path) -> PosVocabulary:
        return cls.from_json(Path(path).read_text())


def group_order(labels: set[str]) -> list[str]:
    """Tag labels in group-id order: PTB order first, then unknown labels sorted."""
    return [t for t in PTB_TAGS if t in labels] + sorted(labels - set(PTB_TAGS))


def build_vocabulary(
    token_ids: Sequence[Sequence[int]],
    token_tags: Sequence[Sequence[str]],
    vocab_size: int,
    special_ids: Sequence[int],
) -> PosVocabulary:
    """V_ρ from tagged training documents: `token_ids[d][i]` was tagged `token_tags[d][i]`."""
    specials = set(special_ids)
    seen: list[set[str]] = [set() for _ in range(vocab_size)]
    for ids, tags in zip(token_ids, token_tags, strict=True):
        if len(ids) != len(tags):
            raise PosVocabularyError(f"a document has {len(ids)} tokens but {len(tags)} tags")
        for token, tag in zip(ids, tags, strict=True):
            if token not in specials:
                seen[token].add(tag)
    names = [*group_order({tag for tags in seen for tag in tags}), SPECIAL_GROUP]
    unseen = any(not tags for token, tags in enumerate(seen) if token not in specials)
    if unseen:
        names.append(UNSEEN_GROUP)
    index = {name: i for i, name in enumerate(names)}
    result: list[tuple[int, ...]] = []
    for token, token_seen in enumerate(seen):
        if token in specials:
            result.append((index[SPECIAL_GROUP],))
        else:
            result.append(tuple(sorted(index[t] for t in token_seen)) if token_seen else (index[UNSEEN_GROUP],))
    return PosVocabulary(tuple(names), tuple(result))


def group_ids(vocabulary: PosVocabulary, token_ids: Sequence[int], tags: Sequence[str],
              special_ids: Sequence[int]) -> list[int]:
    """Observed group id of each token of one training document (specials → SPECIAL_GROUP)."""
    index = {name: i for i, name in enumerate(vocabulary.tags)}
    specials = set(special_ids)
    special = index[SPECIAL_GROUP]
    return [special if token in specials else index[tag] for token, tag in zip(token_ids, tags, strict=True)]
