"""The byte-level BPE tokenizer of a llama.cpp GGUF file, as a `tokenizer.json`-shaped dict.

A GGUF file keeps its vocabulary in metadata: `tokenizer.ggml.tokens` (by id), `tokenizer.ggml.token_type`
(control and user-defined tokens become added tokens), `tokenizer.ggml.merges` ("a b" strings, in order) and
whether llama.cpp adds BOS / EOS around a text. `gguf_tokenizer` turns them into what the `tokenizers` library
reads, so an import renumbers it like a folder's `tokenizer.json` (engine/checkpoints/vocabulary.py).

The tokenizer's pre-tokenizer follows `tokenizer.ggml.pre`, llama.cpp's name for how text is split into
words before BPE:

- "smollm" (SmolLM, SmolLM2): llama.cpp splits every digit on its own before the GPT-2 regex, so
  `Sequence[Digits(individual_digits=True), ByteLevel(use_regex=True)]`. (The `tokenizer.json` that
  transformers writes for these files lacks the digit split, so its ids differ around digits.)
- "llama-bpe", "llama3", "llama-v3", "smaug-bpe" (Llama 3's split): the Llama 3 regex (digits in groups of up
  to three, case-insensitive contractions) as a `Split`, then `ByteLevel(use_regex=False)`, and merges
  that do not apply to a word that is itself a token (`ignore_merges`), as in Llama 3's `tokenizer.json`.
- "gpt2", "gpt-2", "default", missing, and every other value: `ByteLevel(use_regex=True)`, GPT-2's regex.
  For the other values this is the nearest byte-level split, not necessarily llama.cpp's exact one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from engine.checkpoints.inspect import CheckpointError

# token types of tokenizer.ggml.token_type (gguf.TokenType)
NORMAL, CONTROL, USER_DEFINED = 1, 3, 4

# Llama 3's pre-tokenizer regex, as in its tokenizer.json (llama.cpp's LLAMA3 pre-type uses the same)
LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")
LLAMA3_PRE = ("llama-bpe", "llama3", "llama-v3", "smaug-bpe")


def gguf_tokenizer(path: Path, metadata: Mapping[str, Any]) -> dict[str, Any]:
    """tokenizer.json for the byte-level BPE vocabulary of a GGUF file (module docstring)."""
    tokens: list[Any] = metadata["tokenizer.ggml.tokens"]
    types: Any = metadata.get("tokenizer.ggml.token_type", [NORMAL] * len(tokens))
    merges: Any = metadata.get("tokenizer.ggml.merges")
    if not isinstance(types, list) or len(types) != len(tokens):
        raise CheckpointError(f"{path}: tokenizer.ggml.token_type does not have one type per token")
    if not isinstance(merges, list) or not all(isinstance(m, str) for m in merges):
        raise CheckpointError(f"{path}: no tokenizer.ggml.merges (the BPE merges)")
    vocab: dict[str, int] = {}
    for token_id, token in enumerate(tokens):
        if not isinstance(token, str):
            raise CheckpointError(f"{path}: tokenizer.ggml.tokens holds a {type(token).__name__}, not a string")
        if token in vocab:
            raise CheckpointError(f"{path}: token {token!r} appears twice (ids {vocab[token]} and {token_id})")
        vocab[token] = token_id
    pairs = []
    for merge in merges:
        space = merge.find(" ", 1)  # llama.cpp's split: a first part that is a space stays whole
        if space < 0:
            raise CheckpointError(f"{path}: damaged merge {merge!r} (not two tokens)")
        pairs.append([merge[:space], merge[space + 1:]])
    added = [{"id": i, "content": token, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": kind == CONTROL}
             for i, (token, kind) in enumerate(zip(tokens, types, strict=True)) if kind in (CONTROL, USER_DEFINED)]
    pre = metadata.get("tokenizer.ggml.pre", "default")
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    if pre == "smollm":
        pre_tokenizer: dict[str, Any] = {"type": "Sequence", "pretokenizers": [
            {"type": "Digits", "individual_digits": True}, byte_level]}
    elif pre in LLAMA3_PRE:
        pre_tokenizer = {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": LLAMA3_REGEX}, "behavior": "Isolated", "invert": False},
            {**byte_level, "use_regex": False}]}
    else:
        pre_tokenizer = byte_level
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": None,
        "pre_tokenizer": pre_tokenizer, "post_processor": _post_processor(metadata, tokens),
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": pre in LLAMA3_PRE, "vocab": vocab, "merges": pairs},
    }


def _post_processor(metadata: Mapping[str, Any], tokens: Sequence[str]) -> dict[str, Any] | None:
    """BOS / EOS around each text when the file says llama.cpp adds them (`tokenizer.ggml.add_bos_token`)."""
    ends: dict[str, list[dict[str, Any]]] = {"bos": [], "eos": []}
    specials: dict[str, Any] = {}
    for which in ends:
        token_id = metadata.get(f"tokenizer.ggml.{which}_token_id")
        if metadata.get(f"tokenizer.ggml.add_{which}_token") is True and isinstance(token_id, int):
            token = tokens[token_id]
            ends[which] = [{"SpecialToken": {"id": token, "type_id": 0}}]
            specials[token] = {"id": token, "ids": [token_id], "tokens": [token]}
    if not specials:
        return None
    a, b = [{"Sequence": {"id": "A", "type_id": 0}}], [{"Sequence": {"id": "B", "type_id": 1}}]
    return {"type": "TemplateProcessing", "single": ends["bos"] + a + ends["eos"],
            "pair": ends["bos"] + a + ends["eos"] + ends["bos"] + b + ends["eos"], "special_tokens": specials}
