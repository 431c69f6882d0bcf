"""The changes a rewording may make to one parsed sentence, and how a chosen set of them is written out.

Two kinds of change, both found on spaCy's parse (engine/pos/spacy_backend.py):

- **word edits** (`word_edits`): a content word (noun, verb, adjective, adverb; not a name, not a
  stop word, not a light verb like "be" / "have" / "go", not a passive verb, which is seldom in its
  first sense: "the meeting was moved") is replaced by a first-sense WordNet synonym
  (engine/rewording/wordnet.py) inflected like it (lemminflect, by its Penn tag: "walked" → VBD),
  with its capital kept; a synonym whose inflected form is rarer than `MIN_ZIPF` on wordfreq's
  scale (3 ≈ once per million words) is left out, as writers would not pick it. A few connectives
  have fixed alternatives (`CONNECTIVES`: "because" → "since" / "as", "very" → "really").
- **clause moves** (`clause_moves`): a sentence that ends in an adverbial clause opened by a
  subordinator ("… because the manager was sick."; spaCy parses "when" as an adverb, so an
  adverbial opener counts too) may open with it instead ("Because the manager
  was sick, the meeting …"), and one that opens with such a clause and a comma may end with it.

A `Rewrite` is a set of word edits on a word order (the sentence's own, or a clause move's), and
`Rewrite.text` writes it: the first word capitalised, the sentence's old first word lowercased
unless it is a name or "I". Which rewrites are good is for the language model to say
(engine/rewording/search.py); this module only proposes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import wordfreq

from engine.rewording.wordnet import WordNet

MIN_ZIPF = 3.0
CONTENT_POS = ("NOUN", "VERB", "ADJ", "ADV")
LIGHT_LEMMAS = frozenset({"be", "have", "do", "get", "make", "go", "say", "not", "so", "then", "there"})
CONNECTIVES = {"because": ("since", "as"), "very": ("really",)}
SUBORDINATORS = frozenset({"because", "when", "before", "after", "if", "since", "while", "although", "though",
                           "once", "until", "whenever"})
BASE_TAGS = frozenset({"NN", "NNP", "VB", "VBP", "JJ", "RB"})  # forms lemminflect need not change


@dataclass(frozen=True)
class WordEdit:
    """Replace the sentence's token `index` with `text`."""

    index: int
    text: str


@dataclass(frozen=True)
class Rewrite:
    """Word edits on a word order: `order` lists token indices and literal strings (an inserted comma)."""

    doc: Any  # the spaCy Doc of the sentence
    order: tuple[int | str, ...]
    edits: tuple[WordEdit, ...] = ()

    @property
    def text(self) -> str:
        """The rewritten sentence (see the module docstring for the casing)."""
        replaced = {edit.index: edit.text for edit in self.edits}
        moved = self.order[0] != 0
        pieces: list[str] = []
        for position, item in enumerate(self.order):
            if isinstance(item, str):
                pieces[-1:] = [pieces[-1].rstrip()] if pieces else []
                pieces.append(item + " ")
                continue
            token = self.doc[item]
            word = replaced.get(item, token.text)
            if moved and item == 0 and not _keeps_capital(token):
                word = word[:1].lower() + word[1:]
            if position == 0:
                word = word[:1].upper() + word[1:]
            following = self.order[position + 1] if position + 1 < len(self.order) else None
            space = token.whitespace_ if following == item + 1 or following is None else " "
            pieces.append(word + space)
        return _tidy("".join(pieces))


def _keeps_capital(token: Any) -> bool:
    return bool(token.pos_ == "PROPN" or token.text == "I" or token.ent_type_)


def _tidy(text: str) -> str:
    """Spaces before closing punctuation dropped (a clause move can leave "sick ."), ends trimmed."""
    for mark in (" ,", " .", " !", " ?", " ;"):
        text = text.replace(mark, mark[1:])
    return text.strip()


def word_edits(doc: Any, wordnet: WordNet) -> list[WordEdit]:
    """Every single-word substitution `doc` allows (see the module docstring)."""
    edits: list[WordEdit] = []
    for token in doc:
        for text in _alternatives(token, wordnet):
            edits.append(WordEdit(token.i, _with_case(text, token.text)))
    return edits


def _alternatives(token: Any, wordnet: WordNet) -> list[str]:
    lower = token.text.lower()
    if lower in CONNECTIVES:
        return list(CONNECTIVES[lower])
    if (token.pos_ not in CONTENT_POS or token.is_stop or token.ent_type_ or token.lemma_.lower() in LIGHT_LEMMAS
            or not token.text.isalpha() or _passive(token)):
        return []
    found = []
    for synonym in wordnet.synonyms(token.lemma_.lower(), token.pos_):
        inflected = _inflected(synonym, token.tag_)
        if inflected is not None and wordfreq.zipf_frequency(inflected, "en") >= MIN_ZIPF:
            found.append(inflected)
    return found


def _passive(token: Any) -> bool:
    """A passive verb ("was moved to Friday") is seldom in its first sense, so it keeps its word."""
    return any(child.dep_ in ("auxpass", "nsubjpass") for child in token.children)


def _inflected(lemma: str, tag: str) -> str | None:
    """`lemma` (maybe "start out") in the form of Penn tag `tag`; its head word inflected; None if unknown."""
    if "'" in lemma or "-" in lemma:
        return None
    head, *rest = lemma.split()
    if tag not in BASE_TAGS:
        from lemminflect import getInflection

        forms = getInflection(head, tag=tag)
        if not forms:
            return None
        head = forms[0]
    return " ".join([head, *rest])


def _with_case(text: str, original: str) -> str:
    return text[:1].upper() + text[1:] if original[:1].isupper() else text


def clause_moves(doc: Any) -> list[tuple[int | str, ...]]:
    """The word orders of moving a final subordinate clause to the front, or a fronted one to the end."""
    words = [token.i for token in doc]
    end = len(words)
    while end > 0 and doc[end - 1].is_punct:
        end -= 1
    closing = tuple(words[end:])
    moves: list[tuple[int | str, ...]] = []
    for token in doc:
        if token.dep_ != "advcl":
            continue
        start, stop = token.left_edge.i, token.right_edge.i + 1
        if doc[start].lower_ not in SUBORDINATORS or doc[start].dep_ not in ("mark", "advmod"):
            continue
        if stop == end and start > 1:  # "X because Y." → "Because Y, X."
            main = words[:start]
            if doc[start - 1].text == ",":
                main = main[:-1]
            moves.append((*words[start:stop], ",", *main, *closing))
        elif start == 0 and stop < end and doc[stop].text == ",":  # "Because Y, X." → "X because Y."
            moves.append((*words[stop + 1:end], *words[start:stop], *closing))
    return moves


def non_overlapping(edits: Sequence[WordEdit]) -> bool:
    """True when no two edits replace the same token."""
    return len({edit.index for edit in edits}) == len(edits)
