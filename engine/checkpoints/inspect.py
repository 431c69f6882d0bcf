"""Is this folder a checkpoint Variorum can import? One clear message when it is not.

A checkpoint folder is what transformers' `save_pretrained` writes (or a Hugging Face cache
snapshot, whose files are links into the cache's blobs): `config.json`, the weights and the
tokenizer's files. Only the two architectures our model families can run are imported:

| `architectures` in config.json | family | Variorum modes |
|---|---|---|
| `GPT2LMHeadModel` (gpt2, distilgpt2 and their fine-tunes) | `gpt2` | Continue |
| `BartForConditionalGeneration` (bart-base, its fine-tunes) | `bart` | Story / Abstract / Paraphrase, fine-tuned |

Checked without loading a single weight, so listing a large cache stays fast:

- the weights: `model.safetensors`, `pytorch_model.bin`, or a sharded index
  (`model.safetensors.index.json` / `pytorch_model.bin.index.json`) whose every shard is present.
  A safetensors file is checked against its own header (a download cut short is shorter than the
  tensors it declares); a link whose target is missing counts as a missing file;
- the tokenizer: `tokenizer.json`, or GPT-2's byte-level BPE pair `vocab.json` + `merges.txt`;
  its vocabulary (plus added tokens) may not be larger than the weights' `vocab_size`, or the model
  would read embedding rows it does not have (smaller is fine: some fine-tunes pad the embedding
  table to a round size; the padding rows are never written).
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.config import ConfigError

ARCHITECTURES = {"GPT2LMHeadModel": "gpt2", "BartForConditionalGeneration": "bart", "LlamaForCausalLM": "llama"}
SINGLE_WEIGHTS = ("model.safetensors", "pytorch_model.bin")
SHARD_INDEXES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")
MAX_JSON_BYTES = 64 * 1024 * 1024  # tokenizer.json of large vocabularies is a few MB; refuse absurd files


class CheckpointError(ConfigError):
    """A folder or name that is not an importable checkpoint; the message says which file and why."""


@dataclass(frozen=True)
class CheckpointInfo:
    """An importable checkpoint: where it is, what it is, and the files an import reads."""

    path: Path  # the folder holding config.json
    name: str  # what the writer knows it by: a cache name ("gpt2", "org/model") or the folder's name
    architecture: str  # a key of ARCHITECTURES
    family: str  # "gpt2" or "bart"
    vocab_size: int  # rows of the weights' embedding table
    tokenizer_size: int  # tokens the tokenizer can produce (≤ vocab_size)
    weights: tuple[Path, ...]  # one file, or every shard
    tokenizer: tuple[Path, ...]  # tokenizer.json, or vocab.json + merges.txt

    @property
    def source(self) -> str:
        """What `variorum import` and the app's import take to find it again: a cache name, or a .gguf file's path."""
        return str(self.path) if self.path.suffix == ".gguf" else self.name

    @property
    def summary(self) -> str:
        """One line for listings: name, family, vocabulary and where it is."""
        return f"{self.name} ({self.architecture}, {self.vocab_size:,} tokens) at {self.path}"


def _read_json(path: Path, what: str) -> Any:
    if not path.is_file():
        raise CheckpointError(f"{path.parent}: no {path.name} ({what})")
    if path.stat().st_size > MAX_JSON_BYTES:
        raise CheckpointError(f"{path}: {path.stat().st_size:,} bytes is too large for a {what}")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CheckpointError(f"{path}: not a readable {what} ({error})") from None


def read_config(directory: Path) -> dict[str, Any]:
    """config.json of a checkpoint folder as a JSON object, or a CheckpointError naming what is wrong."""
    config = _read_json(directory / "config.json", "model config")
    if not isinstance(config, dict):
        raise CheckpointError(f"{directory / 'config.json'}: not a model config (a JSON object)")
    return config


def read_architecture(directory: Path) -> tuple[str, str, int]:
    """(architecture, family, vocab_size) from config.json, or a CheckpointError naming what is wrong."""
    config = read_config(directory)
    architectures = config.get("architectures") or []
    known = [a for a in architectures if a in ARCHITECTURES]
    if not known:
        found = ", ".join(map(str, architectures)) or f"model_type {config.get('model_type', 'unknown')!r}"
        raise CheckpointError(f"{directory}: {found} is not supported; Variorum imports GPT-2 (GPT2LMHeadModel), "
                              "Llama (LlamaForCausalLM, or a .gguf file) and BART (BartForConditionalGeneration) "
                              "checkpoints")
    vocab_size = config.get("vocab_size")
    if not isinstance(vocab_size, int) or vocab_size <= 0:
        raise CheckpointError(f"{directory / 'config.json'}: no positive vocab_size")
    return known[0], ARCHITECTURES[known[0]], vocab_size


def _check_safetensors(path: Path) -> None:
    """A safetensors file at least as long as its header says (8-byte length, JSON, then the data)."""
    size = path.stat().st_size
    with path.open("rb") as file:
        head = file.read(8)
        if len(head) < 8:
            raise CheckpointError(f"{path}: too short to be a safetensors file (download cut short?)")
        (header_len,) = struct.unpack("<Q", head)
        if header_len > min(size - 8, MAX_JSON_BYTES):
            raise CheckpointError(f"{path}: not a safetensors file, or cut short")
        try:
            header = json.loads(file.read(header_len))
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise CheckpointError(f"{path}: its safetensors header is damaged") from None
    ends = [int(t["data_offsets"][1]) for k, t in header.items() if k != "__metadata__" and isinstance(t, dict)]
    if 8 + header_len + max(ends, default=0) > size:
        raise CheckpointError(f"{path}: {size:,} bytes, its header declares {8 + header_len + max(ends):,} "
                              "(download cut short?)")


def _present(path: Path, what: str) -> Path:
    if not path.is_file():  # also a link into the cache whose blob is missing
        state = "is a broken link" if path.is_symlink() else "is missing"
        raise CheckpointError(f"{path.parent}: {path.name} ({what}) {state}")
    return path


def find_weights(directory: Path) -> tuple[Path, ...]:
    """The weights files of a checkpoint folder (one file or every shard), each checked present."""
    for index_name in SHARD_INDEXES:
        if (directory / index_name).exists():
            index = _read_json(directory / index_name, "weights index")
            shards = sorted(set((index.get("weight_map") or {}).values())) if isinstance(index, dict) else []
            if not shards:
                raise CheckpointError(f"{directory / index_name}: lists no weight files")
            files = tuple(_present(directory / shard, "a weights shard") for shard in shards)
            for file in files:
                if file.suffix == ".safetensors":
                    _check_safetensors(file)
            return files
    for name in SINGLE_WEIGHTS:
        if (directory / name).exists() or (directory / name).is_symlink():
            file = _present(directory / name, "the weights")
            if file.suffix == ".safetensors":
                _check_safetensors(file)
            return (file,)
    raise CheckpointError(f"{directory}: no weights ({' or '.join(SINGLE_WEIGHTS)})")


def tokenizer_vocab_size(directory: Path) -> tuple[tuple[Path, ...], int]:
    """(tokenizer files, vocabulary size with added tokens) of a checkpoint folder."""
    if (directory / "tokenizer.json").exists() or (directory / "tokenizer.json").is_symlink():
        path = _present(directory / "tokenizer.json", "the tokenizer")
        spec = _read_json(path, "tokenizer")
        vocab = ((spec.get("model") or {}).get("vocab") if isinstance(spec, dict) else None) or {}
        ids = set(vocab.values()) if isinstance(vocab, dict) else set(range(len(vocab)))
        ids |= {t.get("id") for t in spec.get("added_tokens") or [] if isinstance(t, dict)}
        return (path,), len(ids)
    if (directory / "vocab.json").exists() or (directory / "merges.txt").exists():
        vocab_path = _present(directory / "vocab.json", "the tokenizer's vocabulary")
        merges = _present(directory / "merges.txt", "the tokenizer's merges")
        vocab = _read_json(vocab_path, "tokenizer vocabulary")
        if not isinstance(vocab, dict):
            raise CheckpointError(f"{vocab_path}: not a token → id map")
        ids = set(vocab.values())
        added = directory / "added_tokens.json"
        if added.is_file():
            extra = _read_json(added, "added tokens")
            ids |= set(extra.values()) if isinstance(extra, dict) else set()
        return (vocab_path, merges), len(ids)
    raise CheckpointError(f"{directory}: no tokenizer (tokenizer.json, or vocab.json + merges.txt)")


def inspect_gguf(path: Path, name: str | None = None) -> CheckpointInfo:
    """A llama.cpp `.gguf` file as a checkpoint: the file is its weights and its tokenizer (metadata only is read)."""
    from engine.checkpoints.gguf_file import read_gguf_summary

    summary = read_gguf_summary(path)
    return CheckpointInfo(path, name or path.stem, "LlamaForCausalLM", "llama", summary.vocab_size,
                          summary.tokenizer_size, (path,), (path,))


def inspect_checkpoint(directory: Path, name: str | None = None) -> CheckpointInfo:
    """The importable checkpoint in `directory` (a folder, or a `.gguf` file), or a CheckpointError naming the
    first problem found."""
    if directory.suffix == ".gguf" and not directory.is_dir():
        if not directory.is_file():
            raise CheckpointError(f"{directory}: no such file")
        return inspect_gguf(directory, name)
    if not directory.is_dir():
        raise CheckpointError(f"{directory}: no such folder")
    architecture, family, vocab_size = read_architecture(directory)
    weights = find_weights(directory)
    tokenizer, tokens = tokenizer_vocab_size(directory)
    if tokens > vocab_size:
        raise CheckpointError(f"{directory}: the tokenizer has {tokens:,} tokens but the weights only "
                              f"{vocab_size:,}: they do not belong together")
    return CheckpointInfo(directory, name or directory.name, architecture, family, vocab_size, tokens, weights,
                          tokenizer)
