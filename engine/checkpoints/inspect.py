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
  its vocabulary (plus added tokens) may not be larger than the weights' `vocab_size`, nor any id
  past it, or the model would read embedding rows it does not have (smaller is fine: some fine-tunes
  pad the embedding table to a round size; the padding rows are never written);
- the depth of each stack (`n_layer`, `encoder_layers`, `decoder_layers`, `num_hidden_layers`): bounded,
  and equal to the blocks the weights hold (from the safetensors headers), before a layer is built.

Every file is read by engine/checkpoints/checkpoint_files.py: a regular file inside the folder (a link
out of it is refused), through the bundles' bounded JSON reader, its content type-checked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.checkpoints import checkpoint_files
from engine.checkpoints.checkpoint_files import (
    is_count,
    present,
    read_json,
    read_object,
    safetensors_shapes,
    shard_name,
)
from engine.files.small_reads import file_problem

CheckpointError = checkpoint_files.CheckpointError  # defined beside the file readers; importers know it from here

ARCHITECTURES = {"GPT2LMHeadModel": "gpt2", "BartForConditionalGeneration": "bart", "LlamaForCausalLM": "llama"}
SINGLE_WEIGHTS = ("model.safetensors", "pytorch_model.bin")
SHARD_INDEXES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")
GENERATION_CONFIG = "generation_config.json"  # read by transformers when it loads some models: checked as ours
MAX_VOCAB = 1 << 21  # rows of an embedding table (the largest vocabularies have about 260k)
MAX_LAYERS = 1024  # a stack's depth (the largest published models have about 130)
# Each stack of blocks: the config key counting them, and the weight names that hold block i (group 1).
LAYER_COUNTS = {
    "gpt2": {"n_layer": r"(?:^|\.)h\.(\d+)\."},
    "bart": {"encoder_layers": r"(?:^|\.)encoder\.layers\.(\d+)\.",
             "decoder_layers": r"(?:^|\.)decoder\.layers\.(\d+)\."},
    "llama": {"num_hidden_layers": r"(?:^|\.)layers\.(\d+)\."},
}
# Tables whose shape config.json gives: weight name ending → (key of its rows, key of its columns, extra rows;
# BART keeps 2 position rows before position 0). The embedding's rows are the tokenizer's to check (a table
# may be padded past the tokenizer), so only its width is compared.
TABLES: dict[str, dict[str, tuple[str | None, str, int]]] = {
    "gpt2": {"wte.weight": (None, "n_embd", 0), "wpe.weight": ("n_positions", "n_embd", 0)},
    "bart": {"shared.weight": (None, "d_model", 0),
             "encoder.embed_positions.weight": ("max_position_embeddings", "d_model", 2)},
    "llama": {"embed_tokens.weight": (None, "hidden_size", 0),
              "layers.0.mlp.gate_proj.weight": ("intermediate_size", "hidden_size", 0)},
}


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

    @property
    def read_files(self) -> tuple[Path, ...]:
        """Every file an import reads besides the weights: config.json and the tokenizer (and transformers'
        generation config where there is one); none for a .gguf file, which is its weights."""
        if self.path.suffix == ".gguf":
            return ()
        extra = [self.path / GENERATION_CONFIG] if (self.path / GENERATION_CONFIG).exists() else []
        return (self.path / "config.json", *self.tokenizer, *extra)


def read_config(directory: Path) -> dict[str, Any]:
    """config.json of a checkpoint folder as a JSON object, or a CheckpointError naming what is wrong."""
    return read_object(directory, "config.json", "model config")


def read_architecture(directory: Path) -> tuple[str, str, int]:
    """(architecture, family, vocab_size) from config.json, or a CheckpointError naming what is wrong."""
    config = read_config(directory)
    where = directory / "config.json"
    architectures = config.get("architectures")
    if architectures is None:
        raise CheckpointError(f"{where}: names no model class (no 'architectures'; its model_type is "
                              f"{config.get('model_type', 'missing')!r:.40}): Variorum imports checkpoints saved as "
                              "GPT2LMHeadModel, LlamaForCausalLM or BartForConditionalGeneration")
    if not isinstance(architectures, list) or not all(isinstance(a, str) for a in architectures):
        raise CheckpointError(f"{where}: 'architectures' is {architectures!r:.60}, not a list of model class names")
    known = [a for a in architectures if a in ARCHITECTURES]
    if not known:
        found = ", ".join(architectures) or "an empty list"
        raise CheckpointError(f"{directory}: {found:.200} is not supported; Variorum imports GPT-2 (GPT2LMHeadModel), "
                              "Llama (LlamaForCausalLM, or a .gguf file) and BART (BartForConditionalGeneration) "
                              "checkpoints")
    vocab_size = config.get("vocab_size")
    if not is_count(vocab_size) or not 0 < vocab_size <= MAX_VOCAB:
        raise CheckpointError(f"{where}: vocab_size is {vocab_size!r:.40}; Variorum reads 1 to {MAX_VOCAB:,}")
    return known[0], ARCHITECTURES[known[0]], vocab_size


def check_sizes(directory: Path, family: str, shapes: dict[str, tuple[int, ...]] | None) -> None:
    """The sizes in config.json that would be built: each stack's depth a count Variorum builds and, where the
    weights' names and shapes are known (safetensors headers), the blocks and tables the weights hold; all
    checked before a single layer is built."""
    config, where = read_config(directory), directory / "config.json"
    for key, pattern in LAYER_COUNTS[family].items():
        count = config.get(key)
        if not is_count(count) or not 0 < count <= MAX_LAYERS:
            raise CheckpointError(f"{where}: {key} is {count!r:.40}; Variorum reads 1 to {MAX_LAYERS:,} layers")
        found = [int(m.group(1)) for name in shapes or {} if (m := re.search(pattern, name))]
        if shapes is not None and max(found, default=-1) + 1 != count:
            raise CheckpointError(f"{where}: {key} is {count:,} but the weights hold {max(found, default=-1) + 1:,} "
                                  "layers: config and weights do not belong together")
    for ending, (rows, columns, extra) in TABLES[family].items():
        name = next((n for n in shapes or {} if n == ending or n.endswith("." + ending)), None)
        if shapes is None or name is None:
            continue
        height = shapes[name][0] - extra if rows is None else config.get(rows)
        width, given = config.get(columns), f"{rows} {config.get(rows)!r:.40} and " if rows else ""
        if not is_count(height) or not is_count(width) or shapes[name] != (height + extra, width):
            raise CheckpointError(f"{where}: {given}{columns} {width!r:.40} do not fit the weights' {name} of shape "
                                  f"{list(shapes[name])}: config and weights do not belong together")


def find_weights(directory: Path) -> tuple[tuple[Path, ...], dict[str, tuple[int, ...]] | None]:
    """The weights files of a checkpoint folder (one file or every shard), each checked present, and the
    tensor shapes their safetensors headers declare (None for pickled .bin weights, whose names are unknown
    until loaded)."""
    for index_name in SHARD_INDEXES:
        if (directory / index_name).exists() or (directory / index_name).is_symlink():
            index = read_object(directory, index_name, "weights index")
            weight_map = index.get("weight_map")
            if not isinstance(weight_map, dict) or not weight_map:
                raise CheckpointError(f"{directory / index_name}: lists no weight files (its 'weight_map')")
            shards = sorted({shard_name(directory / index_name, shard) for shard in weight_map.values()})
            return _checked_weights(directory, shards, "a weights shard")
    for name in SINGLE_WEIGHTS:
        if (directory / name).exists() or (directory / name).is_symlink():
            return _checked_weights(directory, [name], "the weights")
    raise CheckpointError(f"{directory}: no weights ({' or '.join(SINGLE_WEIGHTS)})")


def _checked_weights(directory: Path, names: list[str],
                     what: str) -> tuple[tuple[Path, ...], dict[str, tuple[int, ...]] | None]:
    files = tuple(present(directory, name, what) for name in names)
    if not all(file.suffix == ".safetensors" for file in files):
        return files, None
    shapes: dict[str, tuple[int, ...]] = {}
    for file in files:
        shapes.update(safetensors_shapes(file))
    return files, shapes


def checked_ids(where: Path, table: Any, what: str) -> dict[str, int]:
    """`table`, checked to be a token → id map, each id a non-negative integer."""
    if not isinstance(table, dict) or not all(isinstance(t, str) and is_count(i) and i >= 0 for t, i in table.items()):
        raise CheckpointError(f"{where}: its {what} is not a map of tokens to ids (whole numbers from 0)")
    return table


def checked_tokenizer_json(path: Path, spec: Any) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """(token → id with the added tokens, merges) of a byte-level BPE tokenizer.json's content, every part of
    the shape the `tokenizers` library reads, or a `CheckpointError` naming the part that is not."""
    model = spec.get("model") if isinstance(spec, dict) else None
    if not isinstance(model, dict):
        raise CheckpointError(f"{path}: not a tokenizer (a JSON object with a 'model')")
    if model.get("type") != "BPE":
        raise CheckpointError(f"{path}: a {model.get('type')!r:.40} tokenizer, not byte-level BPE")
    vocab = checked_ids(path, model.get("vocab"), "vocabulary")
    added = spec.get("added_tokens") or []
    if not isinstance(added, list) or not all(isinstance(t, dict) for t in added):
        raise CheckpointError(f"{path}: its added_tokens is not a list of tokens")
    extra = checked_ids(path, {t.get("content"): t.get("id") for t in added}, "added_tokens")
    merges = model.get("merges") or []
    pairs = [tuple(m.split(" ", 1)) if isinstance(m, str) else tuple(m) if isinstance(m, list | tuple) else ()
             for m in (merges if isinstance(merges, list) else [None])]
    if not all(len(p) == 2 and all(isinstance(piece, str) for piece in p) for p in pairs):
        raise CheckpointError(f"{path}: its merges are not pairs of pieces")
    return {**vocab, **extra}, [(a, b) for a, b in pairs]


def tokenizer_vocab_size(directory: Path, vocab_size: int) -> tuple[tuple[Path, ...], int]:
    """(tokenizer files, vocabulary size with added tokens) of a checkpoint folder; every id must be a row of
    the weights' embedding table (`vocab_size` rows)."""
    if (directory / "tokenizer.json").exists() or (directory / "tokenizer.json").is_symlink():
        files: tuple[Path, ...] = (present(directory, "tokenizer.json", "the tokenizer"),)
        vocab, _ = checked_tokenizer_json(files[0], read_json(directory, "tokenizer.json", "tokenizer"))
        ids = set(vocab.values())
    elif (directory / "vocab.json").exists() or (directory / "merges.txt").exists():
        files = (present(directory, "vocab.json", "the tokenizer's vocabulary"),
                 present(directory, "merges.txt", "the tokenizer's merges"))
        vocab = checked_ids(files[0], read_json(directory, "vocab.json", "tokenizer vocabulary"), "vocabulary")
        ids = set(vocab.values())
        if (directory / "added_tokens.json").exists() or (directory / "added_tokens.json").is_symlink():
            added = read_json(directory, "added_tokens.json", "added tokens")
            ids |= set(checked_ids(directory / "added_tokens.json", added, "added tokens").values())
    else:
        raise CheckpointError(f"{directory}: no tokenizer (tokenizer.json, or vocab.json + merges.txt)")
    if len(ids) > vocab_size:
        raise CheckpointError(f"{directory}: the tokenizer has {len(ids):,} tokens but the weights only "
                              f"{vocab_size:,}: they do not belong together")
    if max(ids, default=0) >= vocab_size:
        raise CheckpointError(f"{directory}: the tokenizer has a token of id {max(ids):,} but the weights have only "
                              f"{vocab_size:,} rows: they do not belong together")
    return files, len(ids)


def inspect_gguf(path: Path, name: str | None = None) -> CheckpointInfo:
    """A llama.cpp `.gguf` file as a checkpoint: the file is its weights and its tokenizer (metadata only is read)."""
    from engine.checkpoints.gguf_file import read_gguf_summary

    summary = read_gguf_summary(path)
    return CheckpointInfo(path, name or path.stem, "LlamaForCausalLM", "llama", summary.vocab_size,
                          summary.tokenizer_size, (path,), (path,))


def inspect_checkpoint(directory: Path, name: str | None = None) -> CheckpointInfo:
    """The importable checkpoint in `directory` (a folder, or a `.gguf` file), or a CheckpointError naming the
    first problem found. The path is kept absolute: a bundle records it, and must find it from any folder."""
    directory = Path(directory).absolute()
    if directory.suffix == ".gguf" and not directory.is_dir():
        problem = file_problem(directory)
        if problem:
            raise CheckpointError(f"{directory} {problem}")
        return inspect_gguf(directory, name)
    if not directory.is_dir():
        problem = file_problem(directory)
        raise CheckpointError(f"{directory}: " + ("no such folder" if problem == "does not exist" else
                                                  f"not a checkpoint folder (it {problem or 'is a file'})"))
    architecture, family, vocab_size = read_architecture(directory)
    weights, shapes = find_weights(directory)
    check_sizes(directory, family, shapes)
    tokenizer, tokens = tokenizer_vocab_size(directory, vocab_size)
    if (directory / GENERATION_CONFIG).exists() or (directory / GENERATION_CONFIG).is_symlink():
        read_object(directory, GENERATION_CONFIG, "generation config")  # transformers reads it; checked the same way
    return CheckpointInfo(directory, name or directory.name, architecture, family, vocab_size, tokens, weights,
                          tokenizer)
