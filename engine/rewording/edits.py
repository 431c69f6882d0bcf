"""The changes a rewording may make to one parsed sentence, and how a chosen set of them is written out.

Three kinds of change, all found on spaCy's parse (engine/pos/spacy_backend.py):

- **word edits** (`word_edits`): a content word (noun, verb, adjective, adverb; not a name, not a
  stop word, not a light verb like "be" / "have" / "go", not a passive verb, which is seldom in its
  first sense: "the meeting was moved") is replaced by a first-sense WordNet synonym
  (engine/rewording/wordnet.py) inflected like it (lemminflect, by its Penn tag: "walked" → VBD),
  with its capital kept (single words only); a synonym whose inflected form is rarer than `MIN_ZIPF`
  on wordfreq's scale (3 ≈ once per million words), or more than `MAX_RARER` below the word itself
  (about 5.6 times rarer: "mommy" for "mom", "alas" for "unfortunately"), is left out, as the writer's
  register would change; a word rarer than `MIN_ZIPF` itself (often a term or a name) keeps its
  place. A particle ("washed it away") and a word of a compound ("country band")
  keep their words. Function words and
  fixed phrases that WordNet leaves out have their own alternatives (engine/rewording/phrasing.py).
- **clause moves** (`clause_moves`): a sentence that ends in an adverbial clause opened by a
  subordinator ("… because the manager was sick."; spaCy parses "when" as an adverb, so an
  adverbial opener counts too) may open with it instead ("Because the manager was sick, the
  meeting …"), and one that opens with an adverbial phrase or clause, with or without a comma
  ("After dinner, we …", "When the rain stopped they …"), may end with it, unless a pronoun would
  then come before its name, a verb would open the sentence ("Following the drummers are dancers")
  or it links to the sentence before ("For example, …"); a lone fronted word ("However,",
  "Fearfully,") stays, as it mostly reads worse at the end.

- **conjunct swaps** (`conjunct_swaps`): two joined nouns or adjectives, or the first two of a list,
  change places, not inside one name ("Rock and Roll"); "bread and butter" aside, which the language
  model finds less likely, the meaning stays.

A `Rewrite` is a set of word edits on a word order (the sentence's own, or a clause move's), and
`Rewrite.text` writes it: the first word capitalised, the sentence's old first word lowercased
unless it is a name or "I". Which rewrites are good is for the language model to say
(engine/rewording/search.py); this module only proposes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any

from engine.data.stop_words import SPACY_ENGLISH_STOP_WORDS
from engine.rewording.wordnet import WordNet

MIN_ZIPF = 3.0
SPELLING_VARIANT = 0.85  # difflib's ratio from which a "synonym" is the word spelt otherwise
MAX_RARER = 0.75  # a synonym at most ~5.6 times rarer than the word: the same register ("mom", not "mommy")
# adverbs that complete a verb ("washed it away", "went inside") rather than add a meaning of their own
PARTICLE_ADVERBS = frozenset({"away", "out", "off", "up", "down", "back", "over", "on", "in", "around", "along",
                              "forth", "about", "through", "together", "apart"})
CONTENT_POS = ("NOUN", "VERB", "ADJ", "ADV")
LIGHT_LEMMAS = frozenset({"be", "have", "do", "get", "make", "go", "say", "not", "so", "then", "there"})
SUBORDINATORS = frozenset({"because", "when", "before", "after", "if", "since", "while", "although", "though",
                           "once", "until", "whenever"})
FRONTED_DEPS = frozenset({"advcl", "prep", "npadvmod", "advmod"})  # a fronted phrase that may close the sentence
# adverbs that modify the subordinate clause after them ("soon after", "just before", "even if"), though
# spaCy may attach them to the main verb
CLAUSE_MODIFIERS = frozenset({"soon", "shortly", "right", "just", "long", "immediately", "even", "only", "directly",
                              "straight", "well", "until"})
# fronted phrases that link the sentence to the one before, and stay in front
DISCOURSE_PHRASES = frozenset({"for example", "for instance", "in fact", "as a result", "of course", "in addition",
                               "on the other hand", "in other words", "at the same time", "in contrast",
                               "by contrast", "in the meantime", "after all", "above all"})
SWAPPABLE_POS = frozenset({"NOUN", "PROPN", "ADJ"})  # joined verbs are often a sequence of events: not swapped
# spaCy's entity types that are names (kept as written); dates, times and amounts are ordinary words
NAME_ENTITIES = frozenset({"PERSON", "NORP", "FAC", "ORG", "GPE", "LOC", "PRODUCT", "EVENT", "WORK_OF_ART", "LAW",
                           "LANGUAGE"})
BASE_TAGS = frozenset({"NN", "NNP", "VB", "VBP", "JJ", "RB"})  # forms lemminflect need not change


@dataclass(frozen=True)
class WordEdit:
    """Replace the sentence's tokens `index` … `end` − 1 (default: token `index` alone) with `text`."""

    index: int
    text: str
    end: int = -1

    @property
    def covered(self) -> range:
        return range(self.index, max(self.end, self.index + 1))


@dataclass(frozen=True)
class Rewrite:
    """Word edits on a word order: `order` lists token indices and literal strings (an inserted comma)."""

    doc: Any  # the spaCy Doc of the sentence
    order: tuple[int | str, ...]
    edits: tuple[WordEdit, ...] = ()

    @property
    def moved(self) -> bool:
        """True when the words are not in the sentence's own order (a clause move)."""
        return self.order != tuple(range(len(self.doc)))

    @property
    def text(self) -> str:
        """The rewritten sentence (see the module docstring for the casing)."""
        replaced = {edit.index: edit for edit in self.edits}
        dropped = {i for edit in self.edits for i in edit.covered if i != edit.index}
        items = [item for item in self.order if isinstance(item, str) or item not in dropped]
        pieces: list[str] = []
        for position, item in enumerate(items):
            if isinstance(item, str):
                pieces[-1:] = [pieces[-1].rstrip()] if pieces else []
                pieces.append(item + " ")
                continue
            token, edit = self.doc[item], replaced.get(item)
            word = token.text if edit is None else edit.text
            if not word:  # a dropped word ("that")
                continue
            if self.moved and item == 0 and not _keeps_capital(token):
                word = word[:1].lower() + word[1:]
            if position == 0:
                word = word[:1].upper() + word[1:]
            last = item if edit is None else edit.covered[-1]
            following = items[position + 1] if position + 1 < len(items) else None
            space = self.doc[last].whitespace_ if following is None or following == last + 1 else " "
            pieces.append(word + space)
        return _tidy("".join(pieces))


def _keeps_capital(token: Any) -> bool:
    return bool(token.pos_ == "PROPN" or token.text == "I" or token.ent_type_ in NAME_ENTITIES)


def _tidy(text: str) -> str:
    """Spaces before closing punctuation dropped (a clause move can leave "sick ."), ends trimmed."""
    for mark in (" ,", " .", " !", " ?", " ;"):
        text = text.replace(mark, mark[1:])
    return text.strip()


def word_edits(doc: Any, wordnet: WordNet) -> list[WordEdit]:
    """Every single-word substitution `doc` allows (see the module docstring); a substitute right after
    "a" / "an" brings the article that its sound needs, as one edit of both words."""
    edits: list[WordEdit] = []
    for token in doc:
        article = doc[token.i - 1] if token.i > 0 and doc[token.i - 1].lower_ in ("a", "an") else None
        possessed = token.i + 1 < len(doc) and doc[token.i + 1].tag_ == "POS"
        for alternative in _alternatives(token, wordnet):
            if possessed and alternative.endswith("s"):
                continue  # "children's" → "kids's": a plural ending in "s" takes its possessive otherwise
            word = with_case(alternative, token.text)
            if article is None:
                edits.append(WordEdit(token.i, word))
            else:
                edits.append(WordEdit(article.i, with_case(indefinite_article(word), article.text) + " " + word,
                                      token.i + 1))
    return edits


def indefinite_article(word: str) -> str:
    """"an" before a vowel letter, else "a" (the spelling rule; "an hour" and "a unit" are its exceptions)."""
    return "an" if word[:1].lower() in "aeiou" else "a"


def _alternatives(token: Any, wordnet: WordNet) -> list[str]:
    import wordfreq  # here, not at the top: training imports this package but needs no word lists

    lower = token.text.lower()
    if (token.pos_ not in CONTENT_POS or token.is_stop or token.ent_type_ in NAME_ENTITIES
            or token.lemma_.lower() in LIGHT_LEMMAS or not token.text.isalpha() or passive_verb(token)
            or token.dep_ == "prt" or lower in PARTICLE_ADVERBS or _in_compound(token)):
        return []
    own = wordfreq.zipf_frequency(lower, "en")
    if own < MIN_ZIPF:  # a rare word is often a term or a name the tagger missed ("Fives", a sport)
        return []
    floor = max(MIN_ZIPF, own - MAX_RARER)
    found = []
    for synonym in wordnet.synonyms(token.lemma_.lower(), token.pos_, attributive=token.dep_ == "amod"):
        if not _plain_synonym(synonym, token.lemma_.lower()):
            continue
        inflected = _inflected(synonym, token.tag_)
        if inflected is not None and wordfreq.zipf_frequency(inflected, "en") >= floor:
            found.append(inflected)
    return found


def _plain_synonym(synonym: str, lemma: str) -> bool:
    """False for what reads as a different word choice rather than the same meaning: an abbreviation
    ("E" for "east"), a capitalised name, another spelling ("neighbour"), a function word, which
    changes how the sentence is built ("later that night" → "after that night"), or a phrase ("staff
    of life", "male parent", and phrasal verbs, which rarely fit the word's own construction: "get it
    started" → "get it set out")."""
    return (" " not in synonym and len(synonym) > 2 and synonym == synonym.lower()
            and SequenceMatcher(None, synonym, lemma).ratio() < SPELLING_VARIANT
            and synonym not in SPACY_ENGLISH_STOP_WORDS)


def _in_compound(token: Any) -> bool:
    """A noun or verb that modifies a noun, or a noun so modified ("country band", "crying face", "trash
    can"), an adjective of a noun that modifies another ("high school student", "small value inductors")
    or one a noun modifies ("college aged daughter"): such words are often set phrases, where a synonym
    of one word breaks them ("nation band", "college elderly daughter")."""
    modifies = token.dep_ in ("compound", "amod", "nmod") and token.pos_ in ("NOUN", "VERB")
    of_a_modifier = token.pos_ == "ADJ" and token.dep_ == "amod" and (
        token.head.dep_ == "compound" or any(c.dep_ == "compound" and c.i > token.i for c in token.head.children))
    modified = any(child.dep_ == "compound" or (child.dep_ == "npadvmod" and child.pos_ == "NOUN" and child.i < token.i)
                   for child in token.children)
    return modifies or of_a_modifier or modified


def passive_verb(token: Any) -> bool:
    """A passive verb ("was moved to Friday") is seldom in its first sense, so it keeps its word."""
    return any(child.dep_ in ("auxpass", "nsubjpass") for child in token.children)


def _inflected(word: str, tag: str) -> str | None:
    """`word` in the form of Penn tag `tag` (lemminflect); None for a hyphenated word or an unknown form."""
    if "'" in word or "-" in word:
        return None
    if tag in BASE_TAGS:
        return word
    from lemminflect import getInflection

    forms = getInflection(word, tag=tag)
    return forms[0] if forms else None


def with_case(text: str, original: str) -> str:
    """`text` capitalised when `original` is."""
    return text[:1].upper() + text[1:] if original[:1].isupper() else text


def words_end(doc: Any) -> int:
    """Where the sentence's words end: before its closing punctuation ("." / "!" / "?" …)."""
    end = len(doc)
    while end > 0 and doc[end - 1].is_punct:
        end -= 1
    return end


def sentence_root(doc: Any) -> Any:
    """The parse's root token (the main verb, mostly); None for an empty parse."""
    return next((token for token in doc if token.dep_ == "ROOT"), None)


def clause_moves(doc: Any) -> list[tuple[int | str, ...]]:
    """The word orders of moving a final subordinate clause to the front, or a fronted phrase to the end."""
    words = [token.i for token in doc]
    end = words_end(doc)
    closing = tuple(words[end:])
    moves: list[tuple[int | str, ...]] = []
    for token in doc:
        start, stop = token.left_edge.i, token.right_edge.i + 1
        if (token.dep_ == "advcl" and stop == end and start > 1 and _subordinate(doc[start])
                and doc[start - 1].lower_ not in CLAUSE_MODIFIERS):  # "soon after I arrived": whole or not at all
            main = words[:start]  # "X because Y." → "Because Y, X."
            if doc[start - 1].text == ",":
                main = main[:-1]
            moves.append((*words[start:stop], ",", *main, *closing))
        elif start == 0 and 1 < stop < end and token.dep_ in FRONTED_DEPS and token.head.dep_ == "ROOT":
            rest = stop + 1 if doc[stop].text == "," else stop  # "After dinner(,) X." → "X after dinner."
            if (rest < end and not doc[rest].is_punct and doc[rest].pos_ not in ("VERB", "AUX")
                    and doc[start:stop].text.lower() not in DISCOURSE_PHRASES
                    and not _pronoun_before_name(doc[start:stop], doc[rest:end])):
                moves.append((*words[rest:end], *words[start:stop], *closing))
    return moves


def conjunct_swaps(doc: Any) -> list[tuple[int | str, ...]]:
    """The word orders of swapping the first two of joined nouns or adjectives ("the cat and the dog" → "the dog
    and the cat"; "Ohio, Iowa and Utah" → "Iowa, Ohio and Utah"), joined by "and" / "or", neither holding
    punctuation or a "no", each with or each without words before its head (so "some bread and milk", where "some" is
    shared, stays)."""
    words = [token.i for token in doc]
    swaps: list[tuple[int | str, ...]] = []
    for second in doc:
        first = second.head
        if (second.dep_ != "conj" or first.dep_ == "conj" or first.pos_ not in SWAPPABLE_POS
                or second.pos_ not in SWAPPABLE_POS):
            continue
        start, join, end = first.left_edge.i, second.left_edge.i - 1, _item_end(second)
        listed = len(list(first.conjuncts)) > 1  # three or more: "A, B and C"
        items = (first, *first.conjuncts)
        joins = [t for t in doc[start:first.right_edge.i + 1] if t.dep_ == "cc" and t.head in items]
        if (join != _item_end(first) or doc[join].lower_ not in ((",",) if listed else ("and", "or"))
                or not joins or any(t.lower_ not in ("and", "or") for t in joins)):
            continue
        spans = (doc[start:join], doc[join + 1:end])
        if any(t.is_punct or t.lower_ == "no" for span in spans for t in span):
            continue  # "a fireplace and no blankets" → "no blankets and a fireplace" moves what "no" denies
        if (first.i > start) != (second.i > join + 1) or _one_name(first, second):
            continue
        swaps.append((*words[:start], *words[join + 1:end], join, *words[start:join], *words[end:]))
    return swaps


def _item_end(item: Any) -> int:
    """Where a joined item's own words end: before the comma or "and" that leads to the next item hanging on it;
    the last item's words are all of its subtree."""
    if not any(child.dep_ == "conj" for child in item.children):
        return int(item.right_edge.i) + 1
    return int(min(child.i for child in item.rights if child.dep_ in ("conj", "cc", "punct")))


def _pronoun_before_name(moved: Any, main: Any) -> bool:
    """True when moving `moved` after `main` would put a pronoun before the name it stands for ("When Pablo
    visited, he smiled." → "He smiled when Pablo visited."); a capitalised word inside the sentence counts
    as a name, as spaCy's small model does not always tag one."""
    named = any(t.pos_ == "PROPN" or (t.i > 0 and t.text[:1].isupper() and t.text != "I") for t in moved)
    return named and any(t.pos_ == "PRON" and t.dep_.startswith("nsubj") for t in main)


def _one_name(first: Any, second: Any) -> bool:
    """True when both words are inside one named entity ("the Rock and Roll Hall of Fame")."""
    return bool(first.ent_iob_ != "O" and second.ent_iob_ == "I")


def _subordinate(first: Any) -> bool:
    """A clause opened by a subordinator (spaCy parses "when" as an adverb, so an adverbial opener counts)."""
    return bool(first.lower_ in SUBORDINATORS and first.dep_ in ("mark", "advmod"))


def non_overlapping(edits: Sequence[WordEdit]) -> bool:
    """True when no two edits replace the same token."""
    covered = [i for edit in edits for i in edit.covered]
    return len(set(covered)) == len(covered)
