"""POS tags of PermGen training targets, for the POSG head (Yang et al., 2022, §4.1, Eq. 4).

What: every target sentence of the training split is tagged once, in the data's natural order,
and each of its BPE tokens gets its word's PTB tag and then its observed group id. The LM
pipeline's `prepare_pos_training` (engine/pos/training.py) does all of it — cached tagging
(`--pos-backend`, `--pos-cache-dir`), piece alignment, V_ρ built from the training split only,
special tokens in the special group — with the sentences as its "documents".

Why per sentence and before permuting: π-SGD reorders whole sentences at every step. A sentence's
tags do not depend on where it is written, so one tagging serves every order; `collate` moves the
groups with their sentence (`mark_groups` in engine/permgen/marks.py) and gives the marks ⟨B-t⟩,
⟨E-t⟩ and ⟨EOP⟩ the special group, as the LM pipeline does for its eos separators. Tagging each
permuted paragraph instead would call the tagger every step and could tag one token differently
in different orders.

Neither paper covers the combination (PermGen has no POS head; POSG's paraphraser is a plain
seq2seq whose target is one sentence, so there is no order to follow). Where the POSG paper is
ambiguous: it tags its paraphrase data with CoreNLP, which also tokenized it (§5.3), but does not
say whether that was before or after lowercasing. We tag the normalised sentences (lowercased,
word-tokenized: engine/data/text.py) because those are the exact strings whose BPE tokens are
the targets — the tagger's character spans must index the same string the tokenizer saw.
Lowercasing costs the tagger some accuracy (proper nouns mostly come out as NN). V_ρ comes from
the whole sentences, including tokens past `max_sentence_len` that training cuts off; such a
token only adds a (token, tag) pair seen in the training text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from engine.data.paragraphs import ParagraphExample
from engine.permgen.model import EncodedExample
from engine.pos.tagger import Tagger
from engine.pos.training import PosTrainingData, prepare_pos_training
from engine.tokenizer import VariorumTokenizer


def sentence_texts(examples: Sequence[ParagraphExample]) -> list[str]:
    """Every target sentence of `examples`, example by example, in natural order (the tagged texts)."""
    return [sentence for example in examples for sentence in example.sentences]


def tag_targets(
    examples: Sequence[ParagraphExample], tokenizer: VariorumTokenizer, backend: str = "spacy",
    cache_dir: Path | None = None, progress: bool = True, tagger: Tagger | None = None,
) -> PosTrainingData:
    """Tag the training targets sentence by sentence (cached on disk); V_ρ and one group id per token.

    Raises TaggerUnavailableError (its message says what to install) when `backend` cannot run."""
    return prepare_pos_training(sentence_texts(examples), tokenizer, backend, cache_dir, progress, tagger)


def attach_groups(encoded: Sequence[EncodedExample], pos: PosTrainingData) -> list[EncodedExample]:
    """Each encoded example with the group ids of its sentences, cut like its sentences.

    `encoded[i]` must be the encoding of the i-th example given to `tag_targets` (same sentences,
    same tokenizer): the tagged sentences were encoded by the same tokenizer from the same strings,
    so a sentence's group ids are as many as its token ids before `encode_examples` cut them."""
    counts = [len(example.sentences) for example in encoded]
    if sum(counts) != len(pos.group_ids):
        raise ValueError(f"{len(pos.group_ids)} tagged sentences for {sum(counts)} encoded target sentences")
    result: list[EncodedExample] = []
    start = 0
    for example, count in zip(encoded, counts, strict=True):
        groups = pos.group_ids[start : start + count]
        start += count
        if any(len(g) < len(s) for g, s in zip(groups, example.sentences, strict=True)):
            raise ValueError("a tagged sentence has fewer tokens than its encoding: the tags were made for "
                             "other sentences or another tokenizer")
        result.append(replace(example, groups=[g[: len(s)] for g, s in zip(groups, example.sentences, strict=True)]))
    return result
