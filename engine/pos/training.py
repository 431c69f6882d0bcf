"""Tag a training corpus for POSG: every BPE token gets its word's PTB tag, then V_ρ and group ids.

`tag_corpus` runs the (cached) tagger over whole documents, encodes each document with character
offsets and aligns word tags to pieces (`align_tokens`). `prepare_pos_training` builds the POS
vocabulary from these tags (training split only) and the observed group id of every token, which
the trainer lays out in blocks exactly like the token ids (`make_blocks` with the same document
lengths), so position (b, t) of the tag blocks is the tag of token (b, t).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from engine.data.blocks import make_blocks
from engine.heads.base import OutputHead
from engine.pos.align import align_tokens
from engine.pos.backends import load_tagger
from engine.pos.cache import STORED_BACKEND, CachedTagger, stored_tagger
from engine.pos.tagger import Tagger
from engine.pos.vocab import SPECIAL_GROUP, PosVocabulary, build_vocabulary, group_ids
from engine.tokenizer import SPECIAL_TOKENS, VariorumTokenizer


@dataclass(frozen=True)
class TaggedCorpus:
    """Token ids and PTB tags (one per token) of each document."""

    token_ids: list[list[int]]
    tags: list[list[str]]


@dataclass(frozen=True)
class PosTrainingData:
    """What POSG training needs: the vocabulary and each training document's group ids."""

    vocabulary: PosVocabulary
    group_ids: list[list[int]]  # per document, one group id per token id
    tagger: str  # backend and model version, for provenance

    @property
    def special_group(self) -> int:
        """Group id of the special tokens (the eos separators between documents)."""
        return self.vocabulary.tags.index(SPECIAL_GROUP)

    def blocks(self, block_size: int) -> torch.Tensor:
        """Group ids laid out like the token blocks (`make_blocks`): [num_blocks, block_size + 1]."""
        return make_blocks(self.group_ids, self.special_group, block_size)

    def install(self, head: OutputHead) -> None:
        """Give a freshly built POSG head these V_ρ (its groups come from `vocabulary.tags`)."""
        from engine.heads.posg import POSGHead

        head = getattr(head, "inner", head)  # under a termination wrapper the POSG head is inside
        if not isinstance(head, POSGHead):
            raise TypeError(f"POS training data needs a posg head, got {head.name!r}")
        head.set_vocabulary(self.vocabulary)


def special_ids() -> list[int]:
    """Ids of Variorum's special tokens (every tokenizer gives them the first ids, see `engine.tokenizer`)."""
    return list(range(len(SPECIAL_TOKENS)))


def tag_corpus(texts: Sequence[str], tokenizer: VariorumTokenizer, tagger: Tagger,
               progress: bool = True) -> TaggedCorpus:
    """Tokenize every text and give each token the PTB tag of the word it belongs to."""
    words = tagger.tag_texts(texts, progress=progress)
    all_ids: list[list[int]] = []
    all_tags: list[list[str]] = []
    for text, text_words in zip(texts, words, strict=True):
        ids, offsets = tokenizer.encode_with_offsets(text)
        all_ids.append(ids)
        all_tags.append(align_tokens(text, text_words, offsets))
    return TaggedCorpus(all_ids, all_tags)


def prepare_pos_training(texts: Sequence[str], tokenizer: VariorumTokenizer, backend: str = "spacy",
                         cache_dir: Path | None = None, progress: bool = True,
                         tagger: Tagger | None = None) -> PosTrainingData:
    """Tag the training documents (cached on disk) and build V_ρ and group ids from them.

    Backend "cache" takes the tags another backend cached for exactly these texts (no tagger needed)."""
    if tagger is None:
        tagger = stored_tagger(texts, cache_dir) if backend == STORED_BACKEND else load_tagger(backend)
    cached = CachedTagger(tagger, cache_dir)
    corpus = tag_corpus(texts, tokenizer, cached, progress)
    specials = special_ids()
    vocabulary = build_vocabulary(corpus.token_ids, corpus.tags, tokenizer.vocab_size, specials)
    ids = [group_ids(vocabulary, doc, tags, specials) for doc, tags in zip(corpus.token_ids, corpus.tags, strict=True)]
    return PosTrainingData(vocabulary, ids, f"{cached.name} {cached.model_version}")
