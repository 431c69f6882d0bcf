"""Two checks on a written story that a writer notices at once: did it keep the sentence order asked for, and
does it say its title word over and over.

- `follows_order`: a paragraph written for an asked sentence order (the writer's "full order" control) follows
  it when its sentences came in exactly that order, every asked sentence has words, each ends as a sentence
  does (".", "!", "?", or one of them before closing quotes or brackets; one the length cap cut off does not),
  and the paragraph ended on its own (end-of-paragraph mark) rather than at a limit or a stop. The marks are
  constrained while decoding, so the order of the marks alone always holds; what can fail is the sentences
  between them.
- `repeats_title_word`: a story repeats its title word when one of its sentences holds a content word of the
  title (alphabetic, not a stop word, compared lowercased) twice or more: "The lighthouse was a lighthouse."
  A title word once in each of several sentences is how people write, and does not count.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from engine.data.stop_words import SPACY_ENGLISH_STOP_WORDS

_ENDS_SENTENCE = re.compile(r"[.!?][\"'”’)\]\s]*$")


def ends_as_a_sentence(text: str) -> bool:
    """Whether `text` ends with ".", "!" or "?" (closing quotes and brackets after it allowed)."""
    return bool(_ENDS_SENTENCE.search(text.strip()))


def follows_order(asked: Sequence[int], written: Sequence[int], sentences: Mapping[int, str], ended: bool) -> bool:
    """Whether a paragraph asked to write sentences in `asked` order did so (see the module docstring):
    `written` is its generation order, `sentences` index → text, `ended` whether it ended on its own."""
    if not ended or list(written) != list(asked):
        return False
    return all(sentences.get(t, "").strip() and ends_as_a_sentence(sentences[t]) for t in asked)


def title_words(title: str) -> set[str]:
    """The title's content words, lowercased."""
    return {w for w in re.findall(r"[^\W\d_]+", title.lower()) if w not in SPACY_ENGLISH_STOP_WORDS}


def repeats_title_word(title: str, sentences: Sequence[str]) -> bool:
    """Whether one of `sentences` holds a content word of `title` twice or more."""
    wanted = title_words(title)
    for sentence in sentences:
        words = re.findall(r"[^\W\d_]+", sentence.lower())
        if any(words.count(w) >= 2 for w in wanted):
            return True
    return False


def share(flags: Sequence[bool]) -> float | None:
    """The share of True among `flags`; None for none."""
    return sum(flags) / len(flags) if flags else None
