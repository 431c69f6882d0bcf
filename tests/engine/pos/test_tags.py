"""PTB tag constants and coarse groups."""

from __future__ import annotations

from collections import Counter

import pytest

from engine.pos import COARSE_GROUPS, FALLBACK_TAG, PTB_TAGS, SpacyTagger, coarse_group_of, tags_of_group

EWT_XPOS = {
    "NN", "IN", "DT", "NNP", "PRP", "JJ", ".", "RB", "VB", "NNS", ",", "CC", "VBP", "VBD", "VBZ", "CD", "VBN",
    "VBG", "MD", "TO", "PRP$", "-RRB-", "-LRB-", "WDT", ":", "WRB", "``", "WP", "''", "RP", "UH", "HYPH", "POS",
    "NNPS", "JJS", "JJR", "NFP", "ADD", "EX", "RBR", "GW", "$", "SYM", "PDT", "FW", "RBS", "LS", "AFX", "WP$",
}


def test_groups_cover_every_tag_exactly_once() -> None:
    counts = Counter(tag for tags in COARSE_GROUPS.values() for tag in tags)
    assert set(counts) == set(PTB_TAGS)
    assert all(count == 1 for count in counts.values())
    assert len(PTB_TAGS) == 45 + 7  # classic PTB + ADD AFX GW HYPH NFP XX _SP


def test_gold_ewt_tags_are_known() -> None:
    assert set(PTB_TAGS) >= EWT_XPOS
    assert FALLBACK_TAG in PTB_TAGS


def test_spacy_labels_are_known(spacy_tagger: SpacyTagger) -> None:
    assert set(spacy_tagger._nlp.get_pipe("tagger").labels) <= set(PTB_TAGS)


@pytest.mark.parametrize(
    ("tag", "group"),
    [("JJR", "adjectives"), ("WRB", "adverbs"), ("NNS", "nouns"), ("NNPS", "proper_nouns"), ("MD", "verbs"),
     ("PRP$", "pronouns"), ("PDT", "determiners"), ("RP", "prepositions"), ("CD", "numbers"),
     ("-LRB-", "punctuation"), ("UH", "other"), ("NOT-A-TAG", "other")],
)
def test_coarse_group_of(tag: str, group: str) -> None:
    assert coarse_group_of(tag) == group
    if tag in PTB_TAGS:
        assert tag in tags_of_group(group)


def test_unknown_group_lists_valid_names() -> None:
    with pytest.raises(ValueError, match="adjectives, adverbs") as err:
        tags_of_group("adjective")
    assert "'adjective'" in str(err.value)
