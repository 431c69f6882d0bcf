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
- **relative "who" / "which" → "that"** in a restrictive clause: "the man who lived next door" →
  "the man that lived next door" (not after a comma, where the clause is a remark, nor a preposition);
- **a reduced relative clause**: "who" / "which" / "that" and its "be" go before the clause's participle
  ("a group which is based in Paris" → "a group based in Paris");
- **"get" + adjective → "become"**: "He got angry." → "He became angry." (only an adjective of a state
  right after it, and no object: "got ready", "got underway" and "got him angry" stay);
- **"that" after a verb of saying or thinking** may go: "She said that the cake was ready." →
  "She said the cake was ready." (a "that" marking a clause complement, dep `mark` under `ccomp`),
  and may come where it is missing after such a verb (`THAT_VERBS`) whose clause opens with its
  subject: "She thought she was late." → "She thought that she was late."

Each is a `WordEdit` (engine/rewording/edits.py) over the tokens it rewrites; an edit with empty text
drops its token.
"""

from __future__ import annotations

from typing import Any

from engine.rewording.edits import WordEdit, with_case

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
    ("due", "to"): ("because of",), ("prior", "to"): ("before",), ("despite",): ("in spite of",),
    ("in", "spite", "of"): ("despite",), ("approximately",): ("about", "around"), ("numerous",): ("many",),
    ("initially",): ("at first",), ("subsequently",): ("later",), ("whilst",): ("while",), ("amongst",): ("among",),
    ("a", "large", "number", "of"): ("many",), ("a", "number", "of"): ("several",),
    ("as", "a", "result", "of"): ("because of",), ("whether", "or", "not"): ("whether",),
    ("all", "of", "a", "sudden"): ("suddenly",), ("suddenly",): ("all of a sudden",), ("really",): ("very",),
    ("at", "last"): ("finally",), ("for", "a", "while"): ("for some time",), ("right", "away"): ("immediately",),
    ("a", "little"): ("a bit",),
    **{("every", time): (f"each {time}",) for time in ("day", "morning", "night", "week", "time")},
    **{("the", "next", time): (f"the following {time}",) for time in ("day", "morning", "evening", "week")},
    **{("the", "following", time): (f"the next {time}",) for time in ("day", "morning", "evening", "week")},
}
LONGEST_PHRASE = max(map(len, PHRASES))
THAT_VERBS = frozenset({"think", "say", "tell", "know", "realize", "realise", "believe", "feel", "hope", "agree",
                        "decide", "notice", "see", "find", "learn", "discover", "remember", "forget", "wish", "admit",
                        "claim"})
# states that "get" and "become" both reach with one meaning: feelings, the body, the weather
STATE_ADJECTIVES = frozenset({"angry", "mad", "sick", "tired", "hungry", "thirsty", "sleepy", "nervous", "scared",
                              "afraid", "anxious", "excited", "upset", "sad", "happy", "jealous", "bored", "worried",
                              "frustrated", "annoyed", "confused", "curious", "suspicious", "impatient", "dizzy",
                              "drunk", "pregnant", "fat", "rich", "famous", "dark", "cold", "hot", "warm", "wet",
                              "dirty", "quiet", "loud", "serious", "popular", "old", "weak", "strong", "sore"})
FINITE_TAGS = frozenset({"VBD", "VBZ", "VBP", "MD"})
EITHER_FORM = frozenset({"start", "begin", "continue", "like", "love", "hate", "prefer"})
CLITICS = {"'s": "is", "'m": "am", "'re": "are", "'ll": "will", "'ve": "have"}
CONTRACTING = frozenset({"i", "you", "he", "she", "it", "we", "they", "that"})  # not "which's"; "that" only as "that's"
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
              and (before.lower_ != "that" or token.lower_ == "is") and _contractible(token)):
            edits.append(WordEdit(before.i, before.text + FULL_FORMS[token.lower_], token.i + 1))
        elif token.lower_ in ("who", "which") and token.head.dep_ == "relcl" and _restrictive(token, before):
            edits.append(WordEdit(token.i, "that"))
        if token.lower_ in ("who", "which", "that") and token.head.dep_ == "relcl":
            edits += _reduced_relative(token)
        elif token.lower_ == "that" and token.dep_ == "mark" and token.head.dep_ == "ccomp":
            edits.append(WordEdit(token.i, ""))
        elif token.dep_ == "ccomp" and token.head.lemma_ in THAT_VERBS and _bare_clause(token):
            first = token.left_edge  # "She thought she was late." → "She thought that she was late."
            edits.append(WordEdit(first.i, f"that {first.text}"))
        if token.dep_ == "xcomp" and token.head.lemma_ in EITHER_FORM and token.head.i < token.i:
            edits += _verb_form(token)
        if token.lemma_ == "get" and token.pos_ == "VERB":
            edits += _become(token)
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


def _become(verb: Any) -> list[WordEdit]:
    """"got angry" → "became angry": "get" right before an adjective of a state (`STATE_ADJECTIVES`; "got
    ready", "got even", "got underway" are idioms that "become" breaks), with no object ("got him angry")."""
    complements = [child for child in verb.children if child.dep_ == "acomp"]
    if (len(complements) != 1 or complements[0].lower_ not in STATE_ADJECTIVES or complements[0].i != verb.i + 1
            or any(child.dep_ in ("dobj", "dative", "auxpass", "nsubjpass") for child in verb.children)):
        return []
    from lemminflect import getInflection

    form = getInflection("become", tag=verb.tag_)
    return [WordEdit(verb.i, with_case(form[0], verb.text))] if form else []


def _phrase_swaps(doc: Any) -> list[WordEdit]:
    """The `PHRASES` alternatives of every phrase in `doc`, longest match first at each word."""
    words = [token.lower_ for token in doc]
    edits: list[WordEdit] = []
    start = 0
    while start < len(words):
        for length in range(LONGEST_PHRASE, 0, -1):
            phrase = tuple(words[start:start + length])
            if phrase in PHRASES and not _prevented(doc, start, phrase):
                original = doc[start].text
                edits += [WordEdit(start, with_case(text, original), start + length) for text in PHRASES[phrase]]
                start += length - 1
                break
        start += 1
    return edits


def _prevented(doc: Any, start: int, phrase: tuple[str, ...]) -> bool:
    """"though" swaps only as a conjunction ("…, though." is an adverb), "really" and "a little" only right
    before the adjective or adverb they grade, "due to" only before a noun phrase ("due to arrive" is
    "expected to")."""
    if phrase == ("though",):
        return bool(doc[start].dep_ != "mark")
    if phrase == ("really",):  # "really happy" is "very happy"; "did you really go" is not "very go"
        return bool(doc[start].head.pos_ not in ("ADJ", "ADV") or doc[start].head.i != start + 1)
    if phrase == ("a", "little"):  # "a little sad" is "a bit sad"; "a little water" is not "a bit water"
        after = doc[start + 2] if start + 2 < len(doc) else None
        return after is not None and after.pos_ not in ("ADJ", "ADV")
    if phrase == ("due", "to"):
        after = doc[start + 2] if start + 2 < len(doc) else None
        return after is None or after.pos_ in ("VERB", "AUX") or after.is_punct
    return False


def _bare_clause(clause: Any) -> bool:
    """A finite clause complement right after its verb (or the verb's object or particle: "told him it was",
    "found out she had"), opened by
    its subject, with no "that" / "if" / "how" ("saw it snow" is not one: its verb is bare)."""
    first, verb = clause.left_edge, clause.head
    between = clause.doc[verb.i + 1:first.i]
    finite = clause.tag_ in FINITE_TAGS or any(c.dep_ == "aux" and c.tag_ in FINITE_TAGS for c in clause.children)
    return (finite and first.i > verb.i and all(t.dep_ in ("dobj", "dative", "prt") and t.head == verb for t in between)
            and first.dep_ in ("nsubj", "nsubjpass", "det")
            and not any(child.dep_ == "mark" for child in clause.children))


def _restrictive(pronoun: Any, before: Any) -> bool:
    """A relative "who" / "which" that opens a restrictive clause as its subject or object ("the man who lived
    there"): no comma before it (", which" adds a remark, and "that" cannot), no preposition ("in which")."""
    return bool(pronoun.dep_ in ("nsubj", "nsubjpass", "dobj") and not before.is_punct and before.pos_ != "ADP")


def _reduced_relative(pronoun: Any) -> list[WordEdit]:
    """"a group which is based in Paris" → "a group based in Paris", "people who are waiting" → "people waiting":
    a relative pronoun that is the clause's subject, then a form of "be", then the clause's participle with words
    after it."""
    doc, verb = pronoun.doc, pronoun.head
    if (pronoun.dep_ not in ("nsubj", "nsubjpass") or pronoun.i + 2 != verb.i or verb.tag_ not in ("VBN", "VBG")
            or verb.right_edge.i == verb.i):  # "the man killed was old" reads as a garden path: keep the clause
        return []
    be = doc[pronoun.i + 1]
    if be.lemma_ != "be" or be.dep_ not in ("aux", "auxpass") or (verb.tag_ == "VBN") != (be.dep_ == "auxpass"):
        return []
    return [WordEdit(pronoun.i, "", be.i + 1)]


def _negation(verb: Any, negation: Any) -> list[WordEdit]:
    stem = verb.lower_
    if negation.lower_ == "n't" and not verb.whitespace_:  # "did n't" → "did not"
        full = SPECIAL_NOT.get(stem, f"{verb.text} not")
        return [WordEdit(verb.i, with_case(full, verb.text), negation.i + 1)]
    if negation.lower_ == "not" and verb.whitespace_:  # "did not" → "didn't"
        short = CONTRACTED_NOT.get(stem, f"{verb.text}n't" if stem in CONTRACTIBLE else "")
        if short:
            return [WordEdit(verb.i, with_case(short, verb.text), negation.i + 1)]
    return []


def _contractible(auxiliary: Any) -> bool:
    """A full "is" / "will" contracts unless a sentence would end on the clitic ("Yes, it is.") or a "not"
    follows, which contracts instead ("they won't", not "they'll not")."""
    following = auxiliary.nbor(1) if auxiliary.i + 1 < len(auxiliary.doc) else None
    return following is not None and not following.is_punct and following.lower_ != "not"

