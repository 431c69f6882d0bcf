"""Word-order alternations that keep a sentence's meaning: particles, recipients, adverbs and time phrases.

Each gives word orders for a `Rewrite` (engine/rewording/edits.py), found on spaCy's parse:

- **particle shifts** (`particle_shifts`): a phrasal verb's particle moves past its object or back
  ("picked up the phone" ↔ "picked the phone up", "brought home a turtle" → "brought a turtle
  home") where WordNet knows the verb and particle as one verb ("float down" it does not: "floated
  down a river" stays); an object of at most `MAX_SHIFTED_WORDS` words, never a pronoun ("picked it
  up" has one order only);
- **recipient shifts** (`recipient_shifts`): the two objects of a verb of giving trade places, with
  "to" or "for" ("gave his mom a hug" ↔ "gave a hug to his mom"; "baked her son a cake" → "baked a
  cake for her son"), when the recipient is a person: a personal pronoun, a name of a person, or a
  noun whose first WordNet sense is a person (engine/rewording/wordnet.py), so "sent the box to
  Paris" stays. A "for" phrase is never turned back ("bought a ticket for the show" is no recipient);
- **adverb moves** (`adverb_moves`): a manner adverb in "-ly" that ends a short main clause goes before
  its verb, or comes back to the end ("washes his hands thoroughly" ↔ "thoroughly washes his
  hands"; "was walking slowly" → "was slowly walking"); adverbs whose place changes what they bear on
  ("only", "just", "really") or that comment on the whole sentence ("luckily") stay (`FIXED_ADVERBS`);
- **time frontings** (`time_frontings`): a time phrase after the main verb opens the sentence
  instead, with a comma ("We played soccer after school." → "After school, we played soccer.";
  "He came over in the evening to get help." → "In the evening, he came over to get help."), when
  the clause's verb is not "be" ("Most were in their twenties." stays), no comma follows it and no
  verb joined after it ("sold bread every day and was successful": in front it would bear on both):
  a phrase with a date or time in it ("in 1998", "last week", "on Saturday", "in the morning"), one opened by
  "after" / "before" / "during", or a time adverb (`TIME_ADVERBS`). The reverse move, of a fronted
  phrase to the end, is a clause move (edits.py).

Which orders read well is for the language model to say (engine/rewording/search.py). A literal
string in an order joins the word before it: "," or " to".
"""

from __future__ import annotations

from typing import Any

from engine.rewording.edits import passive_verb, sentence_root, words_end
from engine.rewording.wordnet import WordNet

MAX_SHIFTED_WORDS = 4  # a longer object between a verb and its particle reads badly ("picked the … up")
MAX_THING_WORDS = 6  # "gave colonists fresh chances to swarm into …": a clause in the thing given stays put
MAX_RECIPIENT_WORDS = 4  # the same for a recipient moved before the thing given
TO_VERBS = frozenset({"give", "send", "show", "hand", "offer", "lend", "pass", "tell", "bring", "teach", "sell",
                      "pay", "owe", "throw", "toss", "mail", "read", "write", "promise", "serve", "award"})
FOR_VERBS = frozenset({"buy", "bake", "cook", "build", "knit", "sew", "order", "pour", "fetch"})
SHIFTING_ADVERBS = frozenset({"home", "away", "back", "out", "off", "up", "down"})  # "brought home the turtle"
# adverbs whose place sets what they bear on ("only", "just") or that comment on the whole sentence
# ("luckily"): they stay where the writer put them
FIXED_ADVERBS = frozenset({"only", "early", "really", "likely", "nearly", "hardly", "barely", "merely", "simply",
                           "especially", "exactly", "mostly", "mainly", "actually", "probably", "certainly",
                           "definitely", "clearly", "obviously", "apparently", "luckily", "unfortunately", "hopefully",
                           "fortunately", "usually", "normally", "generally", "seriously", "literally", "totally",
                           "completely", "absolutely", "finally", "eventually", "suddenly", "immediately", "recently",
                           "lately", "daily", "weekly", "monthly", "yearly", "annually"})
MOVABLE_AFTER_VERB = frozenset({"dobj", "prt", "advmod", "npadvmod", "punct", "dative", "acomp", "prep"})
MAX_VERB_PHRASE = 6  # words after the verb that a manner adverb may move past
PERSONAL_PRONOUNS = frozenset({"me", "you", "him", "her", "us", "them"})
TIME_ENTITIES = frozenset({"DATE", "TIME"})
TIME_PREPOSITION_WORDS = frozenset({"in", "on", "at", "since", "until", "by", "over", "throughout", "for"})
MAX_FRONTED_WORDS = 6  # a longer phrase at the front delays the sentence's subject too long
TIME_PREPOSITIONS = frozenset({"after", "before", "during"})  # temporal whatever their object ("after school")
# nouns that make a phrase a time ("in the morning", "at night", "over the summer"), where spaCy tags no date
TIME_NOUNS = frozenset({"morning", "afternoon", "evening", "night", "weekend", "summer", "winter", "spring", "autumn",
                        "moment", "minute", "hour", "week", "month", "year"})
TIME_ADVERBS = frozenset({"yesterday", "today", "tonight", "tomorrow", "later", "afterwards", "afterward",
                          "recently", "eventually", "soon"})
Order = tuple[int | str, ...]


def word_order_changes(doc: Any, wordnet: WordNet) -> list[Order]:
    """Every order the alternations of the module docstring allow for `doc`."""
    return particle_shifts(doc, wordnet) + recipient_shifts(doc, wordnet) + time_frontings(doc) + adverb_moves(doc)


def adverb_moves(doc: Any) -> list[Order]:
    """A manner adverb that ends the main clause moves before its verb, or one right before the verb moves to the
    end ("washes his hands thoroughly" ↔ "thoroughly washes his hands"; see the module docstring)."""
    verb = sentence_root(doc)
    if verb is None or verb.pos_ != "VERB":
        return []
    words = [token.i for token in doc]
    end = words_end(doc)
    simple = (all(child.dep_ in MOVABLE_AFTER_VERB for child in verb.rights) and end - verb.i - 1 <= MAX_VERB_PHRASE
              and verb.right_edge.i + 1 >= end)
    orders: list[Order] = []
    for adverb in verb.children:
        if (adverb.dep_ != "advmod" or adverb.tag_ != "RB" or not adverb.lower_.endswith("ly")
                or adverb.lower_ in FIXED_ADVERBS or any(True for _ in adverb.children) or not simple):
            continue
        if adverb.i == end - 1 and adverb.i > verb.i and not doc[adverb.i - 1].is_punct:
            orders.append((*words[:verb.i], adverb.i, *words[verb.i:adverb.i], *words[end:]))
        elif adverb.i == verb.i - 1 and adverb.i > 0 and end > verb.i + 1:
            orders.append((*words[:adverb.i], *words[verb.i:end], adverb.i, *words[end:]))
    return orders


def particle_shifts(doc: Any, wordnet: WordNet) -> list[Order]:
    """"picked up the phone" ↔ "picked the phone up" (see the module docstring)."""
    words = [token.i for token in doc]
    orders: list[Order] = []
    for particle in doc:
        verb = particle.head
        objects = [child for child in verb.children if child.dep_ == "dobj"]
        shifts = particle.dep_ == "prt" or (particle.dep_ == "advmod" and particle.lower_ in SHIFTING_ADVERBS)
        if (not shifts or len(objects) != 1 or objects[0].pos_ == "PRON"
                or not wordnet.senses(f"{verb.lemma_} {particle.lower_}", "VERB")):
            continue
        start, stop = objects[0].left_edge.i, objects[0].right_edge.i + 1
        if stop - start > MAX_SHIFTED_WORDS or any(token.is_punct for token in doc[start:stop]):
            continue
        span = words[start:stop]
        if particle.i == verb.i + 1 and start == particle.i + 1:
            orders.append((*words[:particle.i], *span, particle.i, *words[stop:]))
        elif start == verb.i + 1 and particle.i == stop:
            orders.append((*words[:start], particle.i, *span, *words[particle.i + 1:]))
    return orders


def recipient_shifts(doc: Any, wordnet: WordNet) -> list[Order]:
    """"gave his mom a hug" ↔ "gave a hug to his mom" (see the module docstring)."""
    orders: list[Order] = []
    for verb in doc:
        lemma = verb.lemma_.lower()
        if verb.pos_ != "VERB" or lemma not in TO_VERBS | FOR_VERBS or passive_verb(verb):
            continue
        orders += _to_prepositional(verb, wordnet, "to" if lemma in TO_VERBS else "for")
        if lemma in TO_VERBS:
            orders += _to_double_object(verb, wordnet)
    return orders


def _to_prepositional(verb: Any, wordnet: WordNet, preposition: str) -> list[Order]:
    """V recipient thing → V thing to/for recipient."""
    doc = verb.doc
    after = sorted((child for child in verb.children if child.i > verb.i), key=lambda child: child.i)
    if len(after) < 2:
        return []
    recipient, thing = after[0], after[1]
    thing_words = verb.doc[thing.left_edge.i:thing.right_edge.i + 1]
    if (recipient.dep_ not in ("dative", "dobj") or thing.dep_ not in ("dobj", "npadvmod")
            or len(thing_words) > MAX_THING_WORDS or any(word.pos_ in ("VERB", "AUX") for word in thing_words)
            or thing.pos_ not in ("NOUN", "PROPN") or thing.ent_type_ in TIME_ENTITIES
            or recipient.left_edge.i != verb.i + 1 or thing.left_edge.i != recipient.right_edge.i + 1
            or not refers_to_person(recipient, wordnet)):
        return []
    words = [token.i for token in doc]
    recipient_span = words[recipient.left_edge.i:recipient.right_edge.i + 1]
    thing_stop = thing.right_edge.i + 1
    return [(*words[:verb.i + 1], *words[thing.left_edge.i:thing_stop], f" {preposition}", *recipient_span,
             *words[thing_stop:])]


def _to_double_object(verb: Any, wordnet: WordNet) -> list[Order]:
    """V thing to recipient → V recipient thing."""
    doc = verb.doc
    things = [child for child in verb.children if child.dep_ == "dobj"]
    if len(things) != 1 or things[0].pos_ == "PRON" or things[0].left_edge.i != verb.i + 1:
        return []
    thing = things[0]
    to_index = thing.right_edge.i + 1
    if to_index >= len(doc) or doc[to_index].lower_ != "to" or doc[to_index].head != verb:
        return []
    recipients = [child for child in doc[to_index].children if child.dep_ == "pobj"]
    if len(recipients) != 1 or not refers_to_person(recipients[0], wordnet):
        return []
    start, stop = recipients[0].left_edge.i, recipients[0].right_edge.i + 1
    if start != to_index + 1 or stop - start > MAX_RECIPIENT_WORDS:
        return []
    words = [token.i for token in doc]
    return [(*words[:verb.i + 1], *words[start:stop], *words[thing.left_edge.i:to_index], *words[stop:])]


def time_frontings(doc: Any) -> list[Order]:
    """A time phrase after the main verb, moved to open the sentence (see the module docstring)."""
    words = [token.i for token in doc]
    end = words_end(doc)
    orders: list[Order] = []
    for token in doc:
        start, stop = token.left_edge.i, token.right_edge.i + 1
        if (stop > end or start < 2 or token.head.dep_ != "ROOT" or token.head.pos_ != "VERB" or token.head == token
                or token.i < token.head.i or (stop < end and doc[stop].is_punct)
                or any(child.dep_ == "conj" and child.i > token.i for child in token.head.children)
                or not time_phrase(token)):  # "were in their twenties": the phrase is what "be" says, not when
            continue
        before = doc[start - 1]
        if before.dep_ == "pcomp" or (before.pos_ == "ADV" and before.head.pos_ == "ADP"):
            continue  # "by early on September 12": the phrase finishes the one before it
        main_stop = start - 1 if before.text == "," else start
        orders.append((*words[start:stop], ",", *words[:main_stop], *words[stop:]))
    return orders


def time_phrase(token: Any) -> bool:
    """True when `token` heads a short time phrase without punctuation: a date or time ("last week"), a
    preposition of time before one ("in 1998", "on Saturday", "in the morning"; "as the minister between 1945
    and 1946" is not one), "after / before / during …", or a time adverb."""
    phrase = token.doc[token.left_edge.i:token.right_edge.i + 1]
    if len(phrase) > MAX_FRONTED_WORDS or any(word.is_punct for word in phrase):
        return False
    if token.dep_ == "npadvmod":
        return _time_word(token)
    if token.dep_ == "prep":
        objects = [child for child in token.children if child.dep_ == "pobj"]
        dated = token.lower_ in TIME_PREPOSITION_WORDS and len(objects) == 1 and _time_word(objects[0])
        return dated or token.lower_ in TIME_PREPOSITIONS
    return token.dep_ == "advmod" and token.lower_ in TIME_ADVERBS and len(phrase) == 1


def _time_word(word: Any) -> bool:
    return bool(word.ent_type_ in TIME_ENTITIES or word.lemma_.lower() in TIME_NOUNS)


def refers_to_person(noun: Any, wordnet: WordNet) -> bool:
    """A recipient: a personal pronoun, a person's name, or a noun whose first sense is a person."""
    if noun.pos_ == "PRON":
        return noun.lower_ in PERSONAL_PRONOUNS
    if noun.ent_type_:
        return bool(noun.ent_type_ == "PERSON")
    return noun.pos_ == "NOUN" and wordnet.names_a_person(noun.lemma_.lower())
