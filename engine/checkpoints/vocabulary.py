"""A checkpoint's byte-level BPE vocabulary as a Variorum tokenizer, and its embedding rows moved to match.

Every Variorum bundle keeps its special tokens at the first ids (engine/tokenizer.py: eos, pad,
⟨B-1..10⟩, ⟨E-1..10⟩, ⟨EOP⟩), and the engine relies on it (eos = 0 ends a document, restarts the
termination steps, separates training documents). A GPT-2 or BART checkpoint numbers its tokens its
own way (GPT-2's end of text is id 50256). Rather than teach every decoder and head a second
numbering, an import renumbers the checkpoint's vocabulary once:

- new ids 0 … 21 are our special tokens; eos takes the checkpoint's end-of-text token and its
  embedding row (GPT-2 `<|endoftext|>`, BART `</s>`), pad takes the checkpoint's pad token where it
  has one; the sentence marks are new rows;
- every other checkpoint token follows in the checkpoint's own order, so id k > its eos becomes
  k + 21 and an id below it k + 22 (for GPT-2, whose eos is last, every word id moves up by 22);
- the merges and the byte-level pre-tokenizer and decoder stay the checkpoint's, so a text is cut
  into exactly the same pieces as the checkpoint's own tokenizer cuts it (checked in the tests
  against transformers' tokenizer). A Llama tokenizer keeps its own pre-tokenizer (SmolLM2 splits
  every digit before the byte-level rules); GPT-2's and BART's are plain byte-level.

A `.gguf` file carries its tokenizer inside; its reader gives it in `tokenizer.json`'s shape
(engine/checkpoints/gguf_file.py), which `import_vocabulary` takes in place of the folder's file.

`source_rows[i]` says which checkpoint row new id i takes (−1: a new row). `move_rows` applies it to
an embedding table (the tied output layer follows), starting new rows at the mean m of the
checkpoint's rows: a neutral point the fine-tune moves them from, and one the model cannot favour
before it: under a tied output layer a new row's logit is h·m, the mean of the checkpoint's logits,
and by Jensen exp(h·m) ≤ (1/V) Σ exp(h·e_i), so each new token has probability at most 1/V (V the
checkpoint's vocabulary) whatever the hidden state h. Rows past the tokenizer's size,
which some fine-tunes add to round the table up, are dropped: no text produces them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors

from engine.checkpoints.checkpoint_files import read_json, read_text
from engine.checkpoints.inspect import CheckpointError, CheckpointInfo, checked_ids, checked_tokenizer_json
from engine.tokenizer import EOS, PAD, SPECIAL_TOKENS, VariorumTokenizer

# The checkpoint tokens our eos and pad take, by family, in the order they are looked for.
END_OF_TEXT = {"gpt2": ("<|endoftext|>",), "bart": ("</s>",), "llama": ("<|endoftext|>", "<|end_of_text|>", "</s>")}
PADDING = {"gpt2": (), "bart": ("<pad>",), "llama": ()}


@dataclass(frozen=True)
class ImportedVocabulary:
    """The renumbered tokenizer and, for each of its ids, the checkpoint row it takes (−1 = new)."""

    tokenizer: VariorumTokenizer
    source_rows: list[int]  # [new vocab]


def _read_bpe(info: CheckpointInfo, spec: Any = None) -> tuple[dict[str, int], list[tuple[str, str]], Any]:
    """The checkpoint's token → id map (added tokens included), its merges in order, and its pre-tokenizer's
    spec (None: byte-level). `spec`: the tokenizer in tokenizer.json's shape, when not read from a file.
    Every file is read and type-checked as engine/checkpoints/inspect.py reads it."""
    folder, first = info.tokenizer[0].parent, info.tokenizer[0]
    if spec is None and first.name == "tokenizer.json":
        spec = read_json(folder, first.name, "tokenizer")
    if spec is not None:
        vocab, merges = checked_tokenizer_json(first, spec)
        pre_tokenizer = spec.get("pre_tokenizer") if info.family == "llama" else None
        return vocab, merges, pre_tokenizer
    vocab = checked_ids(first, read_json(folder, first.name, "tokenizer vocabulary"), "vocabulary")
    lines = read_text(folder, info.tokenizer[1].name, "the tokenizer's merges").splitlines()
    pairs = [tuple(line.split(" ", 1)) for line in lines if line and not line.startswith("#version")]
    vocab, merges = checked_tokenizer_json(info.tokenizer[1], {"model": {"type": "BPE", "vocab": vocab,
                                                                          "merges": pairs}})
    return vocab, merges, None


def _special_row(vocab: dict[str, int], names: tuple[str, ...]) -> int:
    return next((vocab[name] for name in names if name in vocab), -1)


def import_vocabulary(info: CheckpointInfo, spec: Any = None) -> ImportedVocabulary:
    """The checkpoint's tokenizer renumbered with our special tokens first (see the module docstring);
    `spec`: its tokenizer in tokenizer.json's shape where it is not a file of the folder (a .gguf's)."""
    vocab, merges, pre_tokenizer = _read_bpe(info, spec)
    eos_row = _special_row(vocab, END_OF_TEXT[info.family])
    if eos_row < 0:
        raise CheckpointError(f"{info.path}: its tokenizer has no end-of-text token "
                              f"({' or '.join(END_OF_TEXT[info.family])})")
    taken = {EOS: eos_row, PAD: _special_row(vocab, PADDING[info.family])}
    source_rows = [taken.get(token, -1) for token in SPECIAL_TOKENS]
    used_rows = set(source_rows)  # a set, not the list: the loop below visits every one of ~50k tokens
    new_vocab = {token: i for i, token in enumerate(SPECIAL_TOKENS)}
    for token, row in sorted(vocab.items(), key=lambda item: item[1]):
        if row in used_rows or token in new_vocab:
            continue
        new_vocab[token] = len(source_rows)
        source_rows.append(row)
        used_rows.add(row)
    try:
        tokenizer = Tokenizer(models.BPE(vocab=new_vocab, merges=merges))
    except Exception as error:  # the library raises its own bare Exception: a merge of pieces not in the vocabulary
        raise CheckpointError(f"{info.path}: its tokenizer's merges do not fit its vocabulary ({error})") from None
    tokenizer.pre_tokenizer = _pre_tokenizer(info, pre_tokenizer)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    tokenizer.add_special_tokens(SPECIAL_TOKENS)
    return ImportedVocabulary(VariorumTokenizer(tokenizer), source_rows)


def _pre_tokenizer(info: CheckpointInfo, spec: Any) -> pre_tokenizers.PreTokenizer:
    """The checkpoint's own pre-tokenizer where it gives one (a Llama's), else GPT-2's byte-level rules."""
    if spec is None:
        return pre_tokenizers.ByteLevel(add_prefix_space=False)
    if not isinstance(spec, dict):
        raise CheckpointError(f"{info.path}: its tokenizer's pre_tokenizer is {spec!r:.40}, not a pre-tokenizer")
    try:  # the tokenizers library reads a component only as part of a whole tokenizer
        whole = Tokenizer.from_str(json.dumps({"version": "1.0", "model": {"type": "BPE", "vocab": {}, "merges": []},
                                               "pre_tokenizer": spec}))
    except Exception as error:  # the library raises its own bare Exception for a spec it cannot read
        raise CheckpointError(f"{info.path}: its tokenizer's pre-tokenizer cannot be read ({error})") from None
    found: pre_tokenizers.PreTokenizer | None = whole.pre_tokenizer
    return pre_tokenizers.ByteLevel(add_prefix_space=False) if found is None else found


def move_rows(table: torch.Tensor, source_rows: list[int]) -> torch.Tensor:
    """Checkpoint embedding rows [V_checkpoint, D] → rows in the new numbering [V_new, D]; new rows at the mean."""
    index = torch.tensor(source_rows, dtype=torch.long, device=table.device)
    moved = table[index.clamp(min=0)].clone()
    moved[index < 0] = table.mean(dim=0)
    return moved

