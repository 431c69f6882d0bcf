"""End at a sentence: a variant ends only after a complete sentence, and one stopped by the length limit is cut
back to its last complete sentence.

A model that ends text on its own (eos; every NMST model) may end it right after the writer's prompt, with
nothing written, or in mid-sentence ("Sal said he would fix it"). With `end_at_sentence`, eos is not allowed
to a row whose text so far does not end a sentence (`without_open_ends`, an allowed-token mask like real
words'): the row writes on until a sentence ends, or until the length limit, which still ends every decode.

The length limit stops a variant wherever the count runs out ("He saved up to"), and a writer inserting
it wants whole sentences. With `DecodeConfig.end_at_sentence`, a language model's variant stopped by the
limit keeps its tokens up to the last one whose text ends a sentence (., ! or ?, then any closing quotes or
brackets), and its finish reason says so (`FINISH_SENTENCE`); a variant without a complete sentence is
kept whole. PermGen's sentences always end with their own marks, so its streams do not need this.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import torch

from engine.decoding.stream import INCOMPLETE_CHAR, Variant

FINISH_SENTENCE = "sentence"
SENTENCE_END = re.compile(r"[.!?][\"'\u201d\u2019)\]]*$")
TAIL_CHARS = 16  # enough of the text's end to see a sentence mark and its closing quotes


def without_open_ends(allowed: torch.Tensor | None, texts: Sequence[str], eos_id: int, vocab_size: int,
                      device: torch.device) -> torch.Tensor | None:
    """`allowed` [N, V] (None: every token) with eos taken from each row whose text does not end a sentence; a row
    that `allowed` leaves nothing but eos keeps it, so it can always go on."""
    open_rows = [row for row, text in enumerate(texts) if not SENTENCE_END.search(text[-TAIL_CHARS:])]
    if not open_rows:
        return allowed
    mask = torch.ones(len(texts), vocab_size, dtype=torch.bool, device=device) if allowed is None else allowed.clone()
    rows = torch.tensor(open_rows, device=mask.device)
    only_eos = ~mask[rows].index_fill(1, torch.tensor([eos_id], device=mask.device), False).any(dim=-1)  # [R]
    mask[rows[~only_eos], eos_id] = False
    return mask


def sentence_end_tokens(token_ids: Sequence[int], decode: Callable[[list[int]], str]) -> int:
    """The most leading tokens whose text ends a sentence; 0 when none does.

    Text is decoded a few tokens at a time from the last complete character (as the stream does), so
    this costs one short decode per token."""
    best, shown, tail = 0, 0, ""
    for k in range(1, len(token_ids) + 1):
        piece = decode(list(token_ids[shown:k]))
        if piece.endswith(INCOMPLETE_CHAR):
            continue
        shown, tail = k, (tail + piece)[-TAIL_CHARS:]
        if SENTENCE_END.search(tail):
            best = k
    return best


def end_at_sentence(variants: Sequence[Variant], decode: Callable[[list[int]], str]) -> None:
    """Cut each variant (stopped by the length limit) back to its last complete sentence, when it has one."""
    for variant in variants:
        keep = sentence_end_tokens(variant.token_ids, decode)
        if not keep:
            continue
        del variant.token_ids[keep:], variant.token_log_probs[keep:], variant.token_groups[keep:]
        variant.text = decode(variant.token_ids)
        variant.finish_reason = FINISH_SENTENCE
