"""The source of a content-words paraphrase model: a sentence's content words, not the sentence itself.

A model trained on sentence → paraphrase pairs that we have (news, Wikipedia simplifications) gives
a writer's sentence back word for word, or garbles it when forced away from it (docs/model-recipes.md).
A content-words model (`paraphrase_source: "content_words"`, engine/permgen/config.py) reads instead
the words that carry the sentence's meaning and writes a whole sentence around them:

- **what is dropped** (`LIGHT_WORDS`): the articles, the commonest light prepositions, "and", the
  complementiser "that", the infinitive "to", commas and full stops. They are what the model may
  choose again, differently. Everything else stays, in the writer's spelling and case: nouns, verbs
  in their tense, pronouns (who did it), negation ("not", "n't", "never", "no"), modals, numbers,
  "but" / "or" / "because" / "if" (how clauses relate), spatial prepositions ("under", "behind"), and
  "?" / "!" (what kind of sentence it is). Choosing this list is our reading of the trade-off
  between freedom to rephrase and faithfulness; it is not from a paper.
- **training** (`noisy_content_words`): the words of a training source are moved locally, each by at
  most `SHUFFLE_DISTANCE` places (the word-shuffle noise of Lample et al. 2018, "Unsupervised Machine
  Translation Using Monolingual Corpora Only": position i gets the key i + U(0, k + 1) and the words
  are sorted by key). The model learns that the order it reads is only roughly the order to write, so
  it may restructure a sentence, while the subject still tends to come before the object.
- **decoding** (`content_words`): the writer's sentence, in its own order, without noise.

Its training data is (a) the sentences of ordinary prose read as sentence → itself pairs, and (b)
real paraphrase pairs A → B; with this source both become "these words → a sentence that says
them", and (b) adds the rewordings that (a) cannot teach.

A model on a pretrained instruction-tuned base may read instead the sentence after an instruction it already
follows (`paraphrase_source: "instruction"`, `PARAPHRASE_INSTRUCTION` then the sentence): the fine-tune then
starts from what the base does when asked to paraphrase rather than from a bare sentence it would continue.
"""

from __future__ import annotations

import random

from engine.data.text import normalize

SOURCE_FORMS = ("sentence", "content_words", "instruction")
PARAPHRASE_INSTRUCTION = "Paraphrase this sentence:"
SHUFFLE_DISTANCE = 3

LIGHT_WORDS = frozenset([
    "a", "an", "the",
    "to", "of", "for", "with", "at", "in", "on", "by", "from", "as", "into", "about",
    "and", "that",
    ",", ".",
])  # compared in lowercase


def content_words(sentence: str, lowercase: bool = False) -> list[str]:
    """The normalised word tokens of `sentence` without its light words, in order."""
    return [word for word in normalize(sentence, lowercase).split() if word.lower() not in LIGHT_WORDS]


def local_shuffle(words: list[str], rng: random.Random, distance: int = SHUFFLE_DISTANCE) -> list[str]:
    """`words` with each moved by at most `distance` places: sorted by the keys i + U(0, distance + 1)."""
    keys = [i + rng.uniform(0, distance + 1) for i in range(len(words))]
    return [word for _, word in sorted(zip(keys, words, strict=True), key=lambda pair: pair[0])]


def noisy_content_words(sentence: str, seed: int, lowercase: bool = False) -> str:
    """A training source: the content words of `sentence`, locally shuffled with `seed`."""
    return " ".join(local_shuffle(content_words(sentence, lowercase), random.Random(seed)))


def paraphrase_source(sentence: str, form: str, lowercase: bool = False) -> str:
    """What a paraphrase model of source form `form` reads for `sentence` when it decodes or is scored."""
    if form not in SOURCE_FORMS:
        raise ValueError(f"paraphrase source form must be one of {list(SOURCE_FORMS)}, got {form!r}")
    if form == "content_words":
        return " ".join(content_words(sentence, lowercase))
    if form == "instruction":
        return f"{normalize(PARAPHRASE_INSTRUCTION, lowercase)} {normalize(sentence, lowercase)}"
    return normalize(sentence, lowercase)
