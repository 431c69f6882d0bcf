"""Tagging real text for POSG training: spaCy words → BPE pieces, V_ρ and observed group ids."""

from __future__ import annotations

import time

import pytest

from engine.pos import SpacyTagger, TaggedWord
from engine.pos.training import prepare_pos_training, special_ids, tag_corpus
from engine.pos.vocab import SPECIAL_GROUP, UNSEEN_GROUP, build_vocabulary, group_ids
from engine.tokenizer import VariorumTokenizer

TRICKY = [
    "I don't think she'll come, y'all.",
    "A state-of-the-art, well-known kettle -- twenty-one euros.",
    "naïve café 🙂👍🏽 東京 — ok?",
    "",
    "\n\n",
    "  two  spaces\tand a tab\n",
]


def word_containing(words: list[TaggedWord], start: int, end: int) -> TaggedWord | None:
    """The word whose span holds [start, end), if one does."""
    return next((w for w in words if w.start <= start and end <= w.end), None)


def check_alignment(text: str, words: list[TaggedWord], offsets: list[tuple[int, int]], tags: list[str]) -> None:
    assert len(tags) == len(offsets)
    for (start, end), tag in zip(offsets, tags, strict=True):
        piece = text[start:end]
        core = piece.strip()
        if not core:  # whitespace: the next word's tag (or the previous one's at the end)
            following = [w for w in words if w.start >= end]
            expected = following[0].tag_ if following else (words[-1].tag_ if words else "_SP")
            assert tag == expected, (text, piece)
            continue
        lead = start + piece.index(core)
        word = word_containing(words, lead, lead + len(core))
        if word is not None:  # a piece inside one word takes that word's tag
            assert tag == word.tag_, (text, piece, word)


@pytest.mark.parametrize("text", TRICKY)
def test_pieces_take_their_words_tags(text: str, tokenizer: VariorumTokenizer, spacy_tagger: SpacyTagger) -> None:
    corpus = tag_corpus([text], tokenizer, spacy_tagger, progress=False)
    ids, offsets = tokenizer.encode_with_offsets(text)
    assert corpus.token_ids == [ids]
    check_alignment(text, spacy_tagger.tag_texts([text])[0], offsets, corpus.tags[0])


def test_byte_pieces_of_one_emoji_share_a_tag(tokenizer: VariorumTokenizer, spacy_tagger: SpacyTagger) -> None:
    text = "She smiled 🙂 twice."
    corpus = tag_corpus([text], tokenizer, spacy_tagger, progress=False)
    _, offsets = tokenizer.encode_with_offsets(text)
    emoji = text.index("🙂")
    emoji_tags = {tag for (start, _), tag in zip(offsets, corpus.tags[0], strict=True) if start == emoji}
    assert len([o for o in offsets if o[0] == emoji]) >= 2  # byte-level BPE splits the emoji
    assert len(emoji_tags) == 1


def test_ten_thousand_character_line(tokenizer: VariorumTokenizer, spacy_tagger: SpacyTagger) -> None:
    text = " ".join(["The quick fox jumped over the lazy dog's back."] * 220)
    assert len(text) > 10_000
    started = time.perf_counter()
    corpus = tag_corpus([text], tokenizer, spacy_tagger, progress=False)
    assert time.perf_counter() - started < 60
    ids, offsets = tokenizer.encode_with_offsets(text)
    check_alignment(text, spacy_tagger.tag_texts([text])[0], offsets, corpus.tags[0])
    assert len(corpus.tags[0]) == len(ids)


def test_vocabulary_overlaps_specials_and_unseen() -> None:
    specials = special_ids()
    eos, first = specials[0], len(specials)
    run, dog, cat = first, first + 1, first + 2
    vocab = build_vocabulary([[run, dog, eos], [run, run]], [["VB", "NN", "NN"], ["NN", "VB"]], first + 4, specials)
    assert vocab.tags == ("NN", "VB", SPECIAL_GROUP, UNSEEN_GROUP)
    assert vocab.token_tags[run] == (0, 1)  # "run" is in V_NN and V_VB
    assert vocab.token_tags[dog] == (0,)
    assert vocab.token_tags[eos] == (2,)  # tagged NN in the text, but specials only live in their group
    assert vocab.token_tags[cat] == (3,) and vocab.token_tags[first + 3] == (3,)  # never seen
    assert all(vocab.token_tags[s] == (2,) for s in specials)
    assert group_ids(vocab, [run, dog, eos], ["VB", "NN", "NN"], specials) == [1, 0, 2]


def test_prepare_uses_the_cache(tokenizer: VariorumTokenizer, spacy_tagger: SpacyTagger, tmp_path) -> None:  # type: ignore[no-untyped-def]
    texts = ["The cat sat on the mat.", "Dogs run fast."]
    first = prepare_pos_training(texts, tokenizer, cache_dir=tmp_path, progress=False, tagger=spacy_tagger)
    assert len(list(tmp_path.iterdir())) == 1
    again = prepare_pos_training(texts, tokenizer, cache_dir=tmp_path, progress=False, tagger=spacy_tagger)
    assert again.vocabulary == first.vocabulary and again.group_ids == first.group_ids
    assert [len(g) for g in first.group_ids] == [len(ids) for ids in tokenizer.encode_batch(texts)]
    assert first.tagger.startswith("spacy ")
