"""Tagging accuracy of a backend against gold XPOS (PTB) tags of CoNLL-U sentences.

Each gold sentence's `# text` is tagged on its own. Gold words are placed in that text by their
forms (`GoldSentence.spans`) and then take a predicted tag with the same rule BPE pieces use
(`align_tokens`): the tag of the predicted word they overlap most. So where the backend tokenizes
differently from UD, a gold word is still scored by the predicted word covering it. Accuracy =
share of gold words whose predicted tag equals the gold XPOS. `span_match_rate` reports how often
a gold word's span is exactly a predicted word's span (tokenization agreement).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from engine.pos.align import align_tokens
from engine.pos.conllu import GoldSentence
from engine.pos.tagger import TaggedWord, Tagger


@dataclass(frozen=True)
class AccuracyReport:
    """Counts of one evaluation run; `seconds` is the time spent in `tag_texts` only."""

    sentences: int
    tokens: int
    correct: int
    span_matches: int
    seconds: float

    @property
    def accuracy(self) -> float:
        """Share of gold tokens tagged with their gold XPOS."""
        return self.correct / self.tokens if self.tokens else 0.0

    @property
    def span_match_rate(self) -> float:
        """Share of gold tokens whose span equals a predicted word's span."""
        return self.span_matches / self.tokens if self.tokens else 0.0

    @property
    def tokens_per_second(self) -> float:
        """Gold tokens tagged per second of tagging time."""
        return self.tokens / self.seconds if self.seconds > 0 else float("inf")


def score_sentence(sentence: GoldSentence, words: Sequence[TaggedWord]) -> tuple[int, int]:
    """(correct tags, exact span matches) of predicted `words` against one gold sentence."""
    spans = sentence.spans()
    predicted = align_tokens(sentence.text, words, spans)
    correct = sum(guess == gold for guess, gold in zip(predicted, sentence.xpos, strict=True))
    predicted_spans = {(word.start, word.end) for word in words}
    return correct, sum(span in predicted_spans for span in spans)


def tagging_accuracy(tagger: Tagger, sentences: Sequence[GoldSentence], progress: bool = True) -> AccuracyReport:
    """Tag every sentence's text with `tagger` and score it against the gold XPOS tags."""
    started = time.perf_counter()
    tagged = tagger.tag_texts([sentence.text for sentence in sentences], progress=progress)
    seconds = time.perf_counter() - started
    correct = span_matches = 0
    for sentence, words in zip(sentences, tagged, strict=True):
        sentence_correct, sentence_matches = score_sentence(sentence, words)
        correct += sentence_correct
        span_matches += sentence_matches
    tokens = sum(len(sentence.forms) for sentence in sentences)
    return AccuracyReport(len(sentences), tokens, correct, span_matches, seconds)
