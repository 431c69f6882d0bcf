"""Invented-word rate: the share of generated words that never occur in the model's training text.

A **word** is a maximal run of letters (Unicode letters: regex `[^\\W\\d_]+`), case-folded; digits,
punctuation, apostrophes and whitespace separate words, so "Don't stop-2" has the words don, t, stop.
Both sides must be split the same way: a language model's decoded text against its raw training
documents, a PermGen model's normalised words against its normalised training text (lowercased and
PTB-tokenized alike). The rate is (generated word occurrences not in the training word set) /
(all generated word occurrences), in [0, 1]; 0 for texts with no words.

A continuation is read after its prompt (`prompts`): a word running across the seam ("…to le" +
"arn to bake") is the word a reader sees ("learn"), so it counts whole, and the prompt's own words
end before the seam and do not count. `variorum eval` passes as vocabulary the *real words* of
engine/word_sources.py (training words, the word list, the writer's words) for the real-words rate
and the training words alone for the unseen-word rate.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

from engine.data.text import WORD


def words(text: str) -> list[str]:
    """The case-folded words of `text`, in order (see the module docstring)."""
    return [w.casefold() for w in WORD.findall(text)]


def word_set(texts: Iterable[str]) -> frozenset[str]:
    """Every word occurring in `texts`."""
    return frozenset(w for text in texts for w in words(text))


def words_after(prompt: str, text: str) -> list[str]:
    """The case-folded words of `text` read after `prompt`: those ending inside `text`, counted whole."""
    return [m.group().casefold() for m in WORD.finditer(prompt + text) if m.end() > len(prompt)]


def invented_word_rate(generated: Sequence[str], vocabulary: frozenset[str] | Collection[str],
                       prompts: Sequence[str] | None = None) -> float:
    """Share of the words of `generated` (read after `prompts[i]` when given) that are not in `vocabulary`."""
    found = [w for i, text in enumerate(generated) for w in (words(text) if prompts is None else
                                                              words_after(prompts[i], text))]
    return sum(w not in vocabulary for w in found) / len(found) if found else 0.0


def word_rates(generated: Sequence[str], real_words: Collection[str], training_words: Collection[str],
               prompts: Sequence[str] | None = None) -> dict[str, float]:
    """The invented-word rate (words that are not real words) and the unseen-word rate (words not in the
    training text) of `generated`, each read after its prompt when `prompts` are given."""
    return {"invented_word_rate": invented_word_rate(generated, real_words, prompts),
            "unseen_word_rate": invented_word_rate(generated, training_words, prompts)}


def doubled_word_rate(generated: Sequence[str], prompts: Sequence[str]) -> float:
    """Share of the words of `generated` (read after `prompts[i]`) that repeat the word just before them with only
    whitespace between ("the dough dough"), case-folded; a word right after the prompt is compared with the
    prompt's last word. What engine/decoding/doubled_words.py forbids, in words rather than pieces."""
    doubled = total = 0
    for prompt, text in zip(prompts, generated, strict=True):
        full = prompt + text
        previous = None
        for match in WORD.finditer(full):
            if match.end() > len(prompt):
                total += 1
                doubled += (previous is not None and previous.group().casefold() == match.group().casefold()
                            and not full[previous.end():match.start()].strip())
            previous = match
    return doubled / total if total else 0.0
