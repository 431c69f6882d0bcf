"""Rewordings of function words that never change meaning: phrases, contractions, verb forms, "that".

- **fixed phrases** (`PHRASES`): words and phrases with an equivalent that holds wherever they
  occur ("because" → "since" / "as", but "because of" → "due to"; "although" → "though"; "such as"
  → "like"; "in order to" → "to"; "nearly" ↔ "almost"; "perhaps" ↔ "maybe"; …). The list is ours,
  kept to alternatives we found safe in any sentence; WordNet has no function words;

- **contractions** both ways, on spaCy's split of them: "did n't" ↔ "did not" ("ca n't" ↔ "cannot",
  "wo n't" ↔ "will not"), and a pronoun's "'s" / "'m" / "'re" / "'ll" / "'ve" ↔ "is" / "am" / "are" /
  "will" / "have" when spaCy reads it as an auxiliary (so a possessive "'s" is left alone);
- **"-ing" ↔ "to"** after a verb that takes either with one meaning ("started crawling" ↔ "started
  to crawl"; `EITHER_FORM`: start, begin, continue, like, love, hate, prefer), the gerund from
  lemminflect;
- **"that" after a verb of saying or thinking** may go: "She said that the cake was ready." →
  "She said the cake was ready." (a "that" marking a clause complement, dep `mark` under `ccomp`),
  and may come where it is missing after such a verb (`THAT_VERBS`) whose clause opens with its
  subject: "She thought she was late." → "She thought that she was late."

Each is a `WordEdit` (engine/rewording/edits.py) over the tokens it rewrites; an edit with empty text
drops its token.
"""

from __future__ import annotations

from typing import Any

from engine.rewording.edits import WordEdit

CONTRACTIBLE = frozenset({"is", "are", "was", "were", "do", "does", "did", "has", "have", "had", "could", "would",
                          "should"})
SPECIAL_NOT = {"ca": "cannot", "wo": "will not", "sha": "shall not"}  # spaCy's stems of can't / won't / shan't
CONTRACTED_NOT = {"can": "can't", "will": "won't"}
PHRASES: dict[tuple[str, ...], tuple[str, ...]] = {
    ("because",): ("since", "as"), ("because", "of"): ("due to",), ("very",): ("really",),
    ("although",): ("though", "even though"), ("though",): ("although",), ("such", "as"): ("like",),
    ("in", "order", "to"): ("to",), ("so", "as", "to"): ("to",), ("a", "lot", "of"): ("lots of",),
    ("lots", "of"): ("a lot of",), ("nearly",): ("almost",), ("almost",): ("nearly",),
    ("perhaps",): ("maybe",), ("maybe",): ("perhaps",), ("mainly",): ("mostly", "chiefly"),
    ("mostly",): ("mainly",), ("known", "as"): ("called",), ("at", "once"): ("right away",),
}
THAT_VERBS = frozenset({"think", "say", "tell", "know", "realize", "realise", "believe", "feel", "hope", "agree",
                        "decide", "notice", "see", "find", "learn", "discover", "remember", "forget", "wish", "admit",
                        "claim"})
FINITE_TAGS = frozenset({"VBD", "VBZ", "VBP", "MD"})
EITHER_FORM = frozenset({"start", "begin", "continue", "like", "love", "hate", "prefer"})
CLITICS = {"'s": "is", "'m": "am", "'re": "are", "'ll": "will", "'ve": "have"}
CONTRACTING = frozenset({"i", "you", "he", "she", "it", "we", "they", "that"})  # not "which's", "who'll"
FULL_FORMS = {full: clitic for clitic, full in CLITICS.items() if clitic != "'ve"}  # "it have" never contracts


def phrasing_edits(doc: Any) -> list[WordEdit]:
    """Every phrase swap, contraction, expansion, verb form and "that" drop `doc` allows."""
    edits = _phrase_swaps(doc)
    for token in doc:
        before = doc[token.i - 1] if token.i > 0 else None
        if before is None:
            continue
        if token.lower_ in ("n't", "not") and token.dep_ == "neg" and before.pos_ in ("AUX", "VERB"):
            edits += _negation(before, token)
        elif token.pos_ == "AUX" and before.pos_ == "PRON" and not before.whitespace_:
            full = CLITICS.get(token.lower_)
            if full is not None:
                edits.append(WordEdit(before.i, f"{before.text} {full}", token.i + 1))
        elif (token.pos_ == "AUX" and before.lower_ in CONTRACTING and token.lower_ in FULL_FORMS
              and _contractible(token)):
            edits.append(WordEdit(before.i, before.text + FULL_FORMS[token.lower_], token.i + 1))
        elif token.lower_ == "that" and token.dep_ == "mark" and token.head.dep_ == "ccomp":
            edits.append(WordEdit(token.i, ""))
        elif token.dep_ == "ccomp" and token.head.lemma_ in THAT_VERBS and _bare_clause(token):
            first = token.left_edge  # "She thought she was late." → "She thought that she was late."
            edits.append(WordEdit(first.i, f"that {first.text}"))
        if token.dep_ == "xcomp" and token.head.lemma_ in EITHER_FORM and token.head.i < token.i:
            edits += _verb_form(token)
    return edits


def _verb_form(verb: Any) -> list[WordEdit]:
    """"crawling" → "to crawl", or "to crawl" → "crawling", right after the governing verb."""
    governor = verb.head
    if verb.tag_ == "VBG" and verb.i == governor.i + 1:
        return [WordEdit(verb.i, f"to {verb.lemma_}")]
    to = verb.doc[verb.i - 1]
    if verb.tag_ == "VB" and to.tag_ == "TO" and to.i == governor.i + 1:
        from lemminflect import getInflection

        gerund = getInflection(verb.lemma_, tag="VBG")
        return [WordEdit(to.i, gerund[0], verb.i + 1)] if gerund else []
    return []


def _phrase_swaps(doc: Any) -> list[WordEdit]:
    """The `PHRASES` alternatives of every phrase in `doc`, longest match first at each word."""
    words = [token.lower_ for token in doc]
    edits: list[WordEdit] = []
    start = 0
    while start < len(words):
        for length in (3, 2, 1):
            phrase = tuple(words[start:start + length])
            if phrase in PHRASES and not _prevented(doc, start, phrase):
                original = doc[start].text
                edits += [WordEdit(start, _cased(text, original), start + length) for text in PHRASES[phrase]]
                start += length - 1
                break
        start += 1
    return edits


def _prevented(doc: Any, start: int, phrase: tuple[str, ...]) -> bool:
    """"though" swaps only as a conjunction ("…, though." is an adverb), "as" never alone."""
    return phrase == ("though",) and doc[start].dep_ != "mark"


def _bare_clause(clause: Any) -> bool:
    """A finite clause complement right after its verb (or the verb's object: "told him it was"), opened by
    its subject, with no "that" / "if" / "how" ("saw it snow" is not one: its verb is bare)."""
    first, verb = clause.left_edge, clause.head
    between = clause.doc[verb.i + 1:first.i]
    finite = clause.tag_ in FINITE_TAGS or any(c.dep_ == "aux" and c.tag_ in FINITE_TAGS for c in clause.children)
    return (finite and first.i > verb.i and all(t.dep_ in ("dobj", "dative") and t.head == verb for t in between)
            and first.dep_ in ("nsubj", "nsubjpass", "det")
            and not any(child.dep_ == "mark" for child in clause.children))


def _negation(verb: Any, negation: Any) -> list[WordEdit]:
    stem = verb.lower_
    if negation.lower_ == "n't" and not verb.whitespace_:  # "did n't" → "did not"
        full = SPECIAL_NOT.get(stem, f"{verb.text} not")
        return [WordEdit(verb.i, _cased(full, verb.text), negation.i + 1)]
    if negation.lower_ == "not" and verb.whitespace_:  # "did not" → "didn't"
        short = CONTRACTED_NOT.get(stem, f"{verb.text}n't" if stem in CONTRACTIBLE else "")
        if short:
            return [WordEdit(verb.i, _cased(short, verb.text), negation.i + 1)]
    return []


def _contractible(auxiliary: Any) -> bool:
    """A full "is" / "will" contracts unless a sentence would end on the clitic ("Yes, it is.") or a "not"
    follows, which contracts instead ("they won't", not "they'll not")."""
    following = auxiliary.nbor(1) if auxiliary.i + 1 < len(auxiliary.doc) else None
    return following is not None and not following.is_punct and following.lower_ != "not"


def _cased(text: str, original: str) -> str:
    return text[:1].upper() + text[1:] if original[:1].isupper() else text
