"""Paraphrase a passage with a language model: each sentence reworded (engine/rewording/search.py).

A language-model bundle serves the Paraphrase task this way (engine/lm/loaded.py) whenever WordNet's
files and spaCy's parser are installed (`engine.rewording.rewording_available`). The passage is split into sentences
and put back in its own layout exactly as for a paraphrase bundle (engine/paraphrase/passage.py), and
the variants are the same `ParaphraseVariant`s with Self-BLEU / Self-WER against the source
(engine/permgen/paraphrase.py), so the app, the CLI and `variorum eval` read them alike.

Sentence j's rewrites come from one seeded draw (seed + j · SENTENCE_SEED_STRIDE), variant i taking
pick (i − j) mod N; so the same seed and N give the same texts. A sentence with fewer than N rewrites
keeps the writer's sentence in the variants left over (`kept_source`), and the rotation spreads the
sentences that have only one or two rewrites over all the variants, rather than giving them all to
the first, so that every variant of a passage differs somewhere. Each variant's tokens are its
rewrite in the model's pieces, with the model's log-probabilities from the scoring pass, streamed
once the sentence is chosen; the writer's stop is honoured between sentences.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

from engine.decoding.settings import DecodeConfig
from engine.decoding.stream import FINISH_CANCELLED, DecodeStream, TokenEvent, Variant, never
from engine.model import LanguageModel
from engine.paraphrase.passage import paraphrase_spans, separators
from engine.paraphrase.variants import (
    FINISH_DONE,
    SENTENCE_SEED_STRIDE,
    ParaphraseVariant,
    complete_paraphrases,
)
from engine.rewording.search import Rewording, RewordSettings, ScoredText, SentenceScorer, split_at_an_initial
from engine.rewording.wordnet import WordNet
from engine.tokenizer import VariorumTokenizer

PARSER_COMPONENTS = ("tok2vec", "tagger", "parser", "attribute_ruler", "lemmatizer", "ner")


@cache
def english_parser() -> Callable[[str], Any]:
    """spaCy's English pipeline with the parser, lemmas and names (loaded once per process)."""
    from engine.pos.spacy_backend import SPACY_MODEL, load_spacy_pipeline

    return load_spacy_pipeline(SPACY_MODEL, PARSER_COMPONENTS)  # type: ignore[no-any-return]


def load_rewording() -> None:
    """Load the parser and WordNet's files now (both are kept for the process)."""
    english_parser()
    WordNet().load()


class RewordStream(DecodeStream):
    """Iterate for `TokenEvent`s; when it ends, `variants` holds N `ParaphraseVariant`s."""

    def __init__(self, model: LanguageModel, tokenizer: VariorumTokenizer, passage: str, n: int,
                 settings: DecodeConfig, should_stop: Callable[[], bool] | None = None) -> None:
        self.spans = paraphrase_spans(passage)
        self.passage, self.tokenizer = passage, tokenizer
        self.should_stop = should_stop or never
        self.base_seed = settings.seed if settings.seed is not None else random.randrange(2**62)
        self.rewording = Rewording(SentenceScorer(model, tokenizer), WordNet(), english_parser(),
                                   RewordSettings(temperature=settings.temperature))
        self.candidates = [ParaphraseVariant(index=i, seed=self.base_seed, settings=settings.variant_record(
            self.base_seed)) for i in range(n)]
        self.variants: list[Variant] = list(self.candidates)
        self.outputs: list[list[str]] = []

    def __iter__(self) -> Iterator[TokenEvent]:
        try:
            for j, prefix in enumerate(separators(self.passage, self.spans)):
                if self.should_stop():
                    for variant in self.candidates:
                        variant.finish_reason = FINISH_CANCELLED
                    return
                start, end = self.spans[j]
                seed = (self.base_seed + j * SENTENCE_SEED_STRIDE) % 2**62
                before = self.passage[self.spans[j - 1][0]:self.spans[j - 1][1]] if j else ""
                picks = ([] if split_at_an_initial(before)  # the rest of "… U.S. | Marine pilots …"
                         else self.rewording.rewrites(self.passage[start:end], len(self.candidates), seed))
                chosen = self._spread(picks, j)
                self.outputs.append([pick.text if pick is not None else "" for pick in chosen])
                for i, pick in enumerate(chosen):
                    if pick is not None:
                        yield from self._emit(i, j, prefix, pick)
            for variant in self.candidates:
                variant.finish_reason = FINISH_DONE
        finally:
            complete_paraphrases(self.candidates, self.passage, self.spans, self.outputs, lowercase=True)

    def _spread(self, picks: list[ScoredText], j: int) -> list[ScoredText | None]:
        """Sentence j's pick for each variant: variant i takes pick (i − j) mod N, None past the last one."""
        n = len(self.candidates)
        return [picks[(i - j) % n] if (i - j) % n < len(picks) else None for i in range(n)]

    def _emit(self, i: int, j: int, prefix: str, pick: ScoredText) -> Iterator[TokenEvent]:
        """Variant i's rewrite of sentence j, token by token (the end-of-text token's log-prob left out)."""
        for k, (token, log_prob) in enumerate(zip(pick.token_ids, pick.log_probs, strict=False)):
            self.candidates[i].add(token, log_prob, 0)
            delta = self.tokenizer.decode([token])
            yield TokenEvent(i, token, (prefix if k == 0 else "") + delta, log_prob, 0, j + 1)
