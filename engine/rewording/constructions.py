"""Changes of construction that keep the meaning: passive to active, and an appositive to a relative clause.

Each is a word order for a `Rewrite` (engine/rewording/edits.py) whose literal strings carry the words
that change or come in; which read well is for the language model to say (engine/rewording/search.py).

- **active voice** (`active_voice`): "The model was proposed by two physicists in 1964." → "Two
  physicists proposed the model in 1964." It applies to a main clause that opens with its subject (or
  with a fronted phrase and its comma) and is passive with a "by" agent and nothing else on its verb: a
  past "was / were" or present "is / are" (the active verb then agrees with the agent: "are sung by the
  children" → "the children sing"), no modal, perfect or negation ("can be seen by", "has been won by"
  and "was not seen by" stay), at most adverbs between "be" and the participle ("was independently
  proposed" → "independently proposed"). The agent is the noun phrase after "by" without a time
  phrase that closes it ("by physicists in 1964": "in 1964" stays at the end). Pronouns change case on
  the way ("He was bitten by them." → "They bit him.").
- **appositive to relative clause** (`appositive_clauses`): "The Janjaweed, a militia group, fought." →
  "The Janjaweed, which was a militia group, fought.": an appositive noun phrase set off by commas that
  opens with a determiner or possessive ("a", "the", "its", "Islam's"), so a name in apposition ("his
  wife, Mary,") stays. "who" for a person (as recipients are found, engine/rewording/orders.py), else
  "which"; "be" in the main verb's tense and the noun's number. The reverse, dropping "which is", is a
  reduced relative clause (engine/rewording/phrasing.py).
"""

from __future__ import annotations

from typing import Any

from engine.rewording.edits import MIN_ZIPF, sentence_root
from engine.rewording.orders import Order, refers_to_person, time_phrase
from engine.rewording.wordnet import WordNet

SUBJECT_CASE = {"him": "he", "her": "she", "them": "they", "me": "I", "us": "we", "you": "you", "it": "it"}
OBJECT_CASE = {"he": "him", "she": "her", "they": "them", "i": "me", "we": "us", "you": "you", "it": "it"}
PLURAL_AGENTS = frozenset({"they", "them", "we", "us", "you", "i", "me"})  # "I" agrees as "they" does
MAX_AGENT_WORDS = 10  # a longer agent at the front ("the governors descending from … in 1608") reads badly
NUMBER_ENTITIES = frozenset({"DATE", "TIME", "CARDINAL", "MONEY", "PERCENT", "QUANTITY", "ORDINAL"})
ACTIVE_TAGS = {"VBD": "VBD", "VBZ": "VBZ", "VBP": "VBZ"}  # be's tag → the active verb's (before agreement)


def active_voice(doc: Any) -> list[Order]:
    """The active version of a passive main clause with a "by" agent (module docstring), as one order or none."""
    verb = sentence_root(doc)
    if verb is None or verb.tag_ != "VBN":
        return []
    parts = _passive_parts(verb)
    if parts is None:
        return []
    subject, be, agent, agent_stop = parts
    form = _active_form(verb, be, agent)
    if form is None:
        return []
    words = [token.i for token in doc]
    by = agent.head
    adverbs = words[be.i + 1:verb.i]
    fronted = words[:subject.left_edge.i]  # "In 1964, " or nothing
    agent_words = _cased_words(doc, range(agent.left_edge.i, agent_stop), SUBJECT_CASE, first=not fronted)
    subject_words = _cased_words(doc, range(subject.left_edge.i, subject.right_edge.i + 1), OBJECT_CASE)
    return [(*fronted, *agent_words, *adverbs, f" {form}", *subject_words, *words[verb.i + 1:by.i],
             *words[agent_stop:])]


def _passive_parts(verb: Any) -> tuple[Any, Any, Any, int] | None:
    """(subject, "be", the agent's noun, where the agent phrase stops) when `verb` heads a clause the module
    docstring allows, else None."""
    doc = verb.doc
    children = {child.dep_: child for child in verb.children}
    subject, be, by = children.get("nsubjpass"), children.get("auxpass"), children.get("agent")
    if (subject is None or be is None or by is None or any(dep in children for dep in ("aux", "neg", "mark"))
            or be.lemma_ != "be" or be.tag_ not in ACTIVE_TAGS or not _opens_clause(subject)
            or subject.right_edge.i + 1 != be.i or by.i < verb.i):
        return None
    if any(doc[i].dep_ != "advmod" or doc[i].head != verb for i in range(be.i + 1, verb.i)):
        return None
    agents = [child for child in by.children if child.dep_ == "pobj"]
    if len(agents) != 1 or agents[0].left_edge.i != by.i + 1 or by.left_edge.i != by.i:  # "only by chitin" stays
        return None
    agent = agents[0]
    stop = agent.right_edge.i + 1
    for child in sorted((c for c in agent.rights if c.dep_ == "prep"), key=lambda c: -c.i):
        if child.right_edge.i + 1 == stop and time_phrase(child):
            stop = child.left_edge.i  # "by physicists in 1964": the time stays where it was
    spans = (doc[subject.left_edge.i:be.i], doc[agent.left_edge.i:stop])
    punctuated = any(token.is_punct and token.tag_ != "HYPH" for span in spans for token in span)
    if punctuated or len(spans[1]) > MAX_AGENT_WORDS:
        return None
    return subject, be, agent, stop


def _opens_clause(subject: Any) -> bool:
    """The subject opens the sentence, or follows a fronted phrase and its comma ("In 1964, the model …")."""
    start, verb = subject.left_edge.i, subject.head
    return start == 0 or (start > 1 and subject.doc[start - 1].text == ","
                          and all(_first_ancestor_from(token, start) == verb for token in subject.doc[:start]))


def _first_ancestor_from(token: Any, start: int) -> Any:
    """`token`'s first ancestor at or after position `start` (the root if there is none)."""
    while token.i < start and token.head != token:
        token = token.head
    return token


def _active_form(verb: Any, be: Any, agent: Any) -> str | None:
    """The verb in the active voice: past for "was / were", else present agreeing with the agent; None when that
    form is rarer than the word edits allow ("characterizes"), as every word Variorum writes is a real word."""
    import wordfreq  # here, as lemminflect: training imports this package but needs no word lists
    from lemminflect import getInflection

    tag = ACTIVE_TAGS[be.tag_]
    plural = (agent.tag_ in ("NNS", "NNPS") or agent.lower_ in PLURAL_AGENTS
              or any(child.dep_ == "conj" for child in agent.children))
    if tag == "VBZ" and plural:
        tag = "VBP"
    forms = getInflection(verb.lemma_, tag=tag)
    if not forms or wordfreq.zipf_frequency(forms[0], "en") < MIN_ZIPF:  # a form too rare to be a real word here
        return None
    return str(forms[0])


def _cased_words(doc: Any, indices: range, cases: dict[str, str], first: bool = False) -> list[int | str]:
    """The tokens at `indices`, a pronoun among them swapped for its other case as a literal string (capitalised
    when it opens the sentence)."""
    items: list[int | str] = []
    for i in indices:
        token = doc[i]
        other = cases.get(token.lower_) if token.pos_ == "PRON" else None
        if other is None:
            items.append(i)
        elif first and not items:
            items.append(other[:1].upper() + other[1:])
        else:
            items.append(f" {other}")
    return items


def appositive_clauses(doc: Any, wordnet: WordNet) -> list[Order]:
    """"X, a Y, …" → "X, which is a Y, …" (see the module docstring), one order per appositive."""
    words = [token.i for token in doc]
    root = sentence_root(doc)
    past = root is not None and (root.tag_ == "VBD" or any(c.dep_ == "aux" and c.tag_ == "VBD" for c in root.children))
    orders: list[Order] = []
    for appositive in doc:
        anchor = appositive.head
        start, stop = appositive.left_edge.i, appositive.right_edge.i + 1
        if (appositive.dep_ != "appos" or {appositive.pos_, anchor.pos_} - {"NOUN", "PROPN"}
                or start < 2 or doc[start - 1].text != "," or anchor.i > start or stop >= len(doc)
                or not (doc[stop].text == "," or (doc[stop].is_punct and stop == len(doc) - 1))
                or doc[start].dep_ not in ("det", "poss") or appositive.ent_type_ in NUMBER_ENTITIES
                or any(token.is_punct and token.tag_ != "HYPH" for token in doc[start:stop])):
            continue
        person = refers_to_person(anchor, wordnet)
        if appositive.pos_ == "NOUN" and wordnet.names_a_person(appositive.lemma_.lower()) != person:
            continue  # "Santa Maria Maggiore, the earliest church": the anchor was taken for a person's name
        pronoun = "who" if person else "which"
        plural = anchor.tag_ in ("NNS", "NNPS") or any(child.dep_ == "conj" for child in anchor.children)
        be = ("were" if plural else "was") if past else ("are" if plural else "is")
        orders.append((*words[:start], f" {pronoun} {be}", *words[start:]))
    return orders
