"""Penn Treebank (PTB) tag set as emitted by spaCy's English models and UD English-EWT XPOS, plus
coarse groups for people.

`PTB_TAGS` is the 45 classic PTB tags (brackets spelled `-LRB-`/`-RRB-`) plus the web-text
extensions that OntoNotes/EWT and spaCy use: ADD (e-mail/URL), AFX (affix), GW (goes-with),
HYPH (hyphen), NFP (superfluous punctuation), XX (unknown) and `_SP` (whitespace).

Coarse groups (every tag belongs to exactly one):

- adjectives: JJ JJR JJS
- adverbs: RB RBR RBS WRB
- nouns: NN NNS
- proper_nouns: NNP NNPS
- verbs: VB VBD VBG VBN VBP VBZ MD
- pronouns: PRP PRP$ WP WP$ EX (existential "there" is a pronoun in UD, `EX` → PRON)
- determiners: DT PDT WDT
- prepositions: IN TO RP. PTB merges prepositions with subordinating conjunctions in IN and
  infinitival with prepositional "to" in TO; particles (RP: "give *up*") are the same word forms
  as prepositions, and a writer asking for "fewer prepositions" means these words too.
- numbers: CD
- punctuation: punctuation and symbols — . , : `` '' -LRB- -RRB- HYPH NFP $ # SYM
- other: everything else — CC FW LS POS UH ADD AFX GW XX _SP
"""

from __future__ import annotations

FALLBACK_TAG = "_SP"
"""Tag for a piece that overlaps no word and has no word to borrow from (see `engine.pos.align`).
It is spaCy's own whitespace tag, so it is part of the tagger's label set and of `PTB_TAGS`."""

COARSE_GROUPS: dict[str, tuple[str, ...]] = {
    "adjectives": ("JJ", "JJR", "JJS"),
    "adverbs": ("RB", "RBR", "RBS", "WRB"),
    "nouns": ("NN", "NNS"),
    "proper_nouns": ("NNP", "NNPS"),
    "verbs": ("VB", "VBD", "VBG", "VBN", "VBP", "VBZ", "MD"),
    "pronouns": ("PRP", "PRP$", "WP", "WP$", "EX"),
    "determiners": ("DT", "PDT", "WDT"),
    "prepositions": ("IN", "TO", "RP"),
    "numbers": ("CD",),
    "punctuation": (".", ",", ":", "``", "''", "-LRB-", "-RRB-", "HYPH", "NFP", "$", "#", "SYM"),
    "other": ("CC", "FW", "LS", "POS", "UH", "ADD", "AFX", "GW", "XX", FALLBACK_TAG),
}
"""Coarse group name → its PTB tags. Groups are disjoint and together cover `PTB_TAGS`."""

PTB_TAGS: tuple[str, ...] = tuple(sorted(tag for tags in COARSE_GROUPS.values() for tag in tags))
"""Every tag this package knows: 45 classic PTB tags + ADD AFX GW HYPH NFP XX `_SP`."""

_GROUP_OF: dict[str, str] = {tag: name for name, tags in COARSE_GROUPS.items() for tag in tags}


def coarse_group_of(tag: str) -> str:
    """Coarse group name of a PTB `tag`; tags outside `PTB_TAGS` (a new model's label) are "other"."""
    return _GROUP_OF.get(tag, "other")


def tags_of_group(name: str) -> tuple[str, ...]:
    """PTB tags of the coarse group `name`; raises ValueError listing the valid names if unknown."""
    try:
        return COARSE_GROUPS[name]
    except KeyError:
        valid = ", ".join(COARSE_GROUPS)
        raise ValueError(f"unknown POS group {name!r}; valid groups: {valid}") from None
