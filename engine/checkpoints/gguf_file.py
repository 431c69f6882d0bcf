"""A llama.cpp GGUF file of a Llama-family model, read into float32 tensors, a config and a tokenizer.

GGUF (llama.cpp's format) is one file: a header of typed key/value metadata (`general.*`, `llama.*`,
`tokenizer.ggml.*`), a table of tensor infos (name, shape in ggml's reversed order, ggml type, offset)
and the aligned tensor data, often quantized in blocks (Q4_1: 32 weights as 4-bit codes with a scale and
a minimum). Variorum reads it into what the Hugging Face import of a `LlamaForCausalLM` folder produces:

- `read_gguf_summary(path)` → `GgufSummary`: the header only, checked (architecture, tokenizer model,
  tensor types, metadata, every tensor's name and shape against the metadata, the file long enough for
  every tensor), no weight dequantized: fast enough to list many files;
- `read_gguf(path)` → `GgufCheckpoint`: the same checks, then every tensor dequantized (`gguf.quants`) to
  float32 under transformers' Llama names, a `LlamaConfig`-style dict and a `tokenizer.json`-style dict.

The header is parsed here, not by `gguf.GGUFReader`: the reader builds a numpy array per token and per merge
(about 4 s for a 49k-token vocabulary) and trusts every count in the file, so a damaged array length makes
it loop for a very long time before failing; this parser checks each length against the bytes left before
reading, and the tensor bytes are read one tensor at a time. Dequantizing is `gguf.quants.dequantize`'s.

Only what Variorum's Llama backbone runs is accepted, one clear `CheckpointError` line otherwise:
`general.architecture` "llama" (no experts, no attention or MLP biases, every head rotated in full), plain
RoPE (no `llama.rope.scaling.type` other than "none", no `rope_freqs.weight` as Llama 3.1 files have),
tensors of the types in `READ_TYPES`, one file (not a part of a split GGUF), and a byte-level BPE tokenizer
(`tokenizer.ggml.model` "gpt2"; SentencePiece "llama" vocabularies are refused).

The header is parsed by engine/checkpoints/gguf_header.py, the tokenizer made by
engine/checkpoints/gguf_tokenizer.py; engine/checkpoints/gguf_search.py finds the files.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType
from gguf.quants import dequantize

from engine.checkpoints.gguf_header import MAX_PARAMETERS, TensorInfo, read_header
from engine.checkpoints.gguf_tokenizer import gguf_tokenizer
from engine.checkpoints.inspect import CheckpointError

# The ggml types read: the float types and the "legacy" and k-quant block formats, all of which
# `gguf.quants.dequantize` (0.19) handles in numpy at a few hundred MB/s. It also dequantizes the i-quants
# (IQ*), ternary (TQ*) and FP4 (MXFP4, NVFP4) formats, but slowly or for other architectures; files
# made with them are refused rather than taking minutes.
READ_TYPES: tuple[GGMLQuantizationType, ...] = tuple(GGMLQuantizationType[name] for name in (
    "F32", "F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K"))

# Generous upper bounds on the shape, checked before anything is built from it
SHAPE_LIMITS = {"hidden_size": 1 << 16, "num_hidden_layers": 1024, "num_attention_heads": 1024,
                "intermediate_size": 1 << 20, "vocab_size": 1 << 21, "max_position_embeddings": 1 << 24}

DEFAULT_ROPE_THETA = 10000.0  # llama.cpp's default when llama.rope.freq_base is absent

# special token ids in the metadata → LlamaConfig's fields (llama.cpp spells out "padding")
SPECIAL_TOKEN_KEYS = {"tokenizer.ggml.bos_token_id": "bos_token_id", "tokenizer.ggml.eos_token_id": "eos_token_id",
                      "tokenizer.ggml.padding_token_id": "pad_token_id"}

# GGUF tensor name inside blk.{i}. → transformers' name inside model.layers.{i}.
LAYER_TENSORS = {
    "attn_norm.weight": "input_layernorm.weight",
    "attn_q.weight": "self_attn.q_proj.weight",
    "attn_k.weight": "self_attn.k_proj.weight",
    "attn_v.weight": "self_attn.v_proj.weight",
    "attn_output.weight": "self_attn.o_proj.weight",
    "ffn_norm.weight": "post_attention_layernorm.weight",
    "ffn_gate.weight": "mlp.gate_proj.weight",
    "ffn_up.weight": "mlp.up_proj.weight",
    "ffn_down.weight": "mlp.down_proj.weight",
}
MODEL_TENSORS = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight",
                 "output.weight": "lm_head.weight"}


@dataclass(frozen=True)
class GgufSummary:
    """A checked GGUF file: what it is, from its header alone."""

    path: Path
    name: str  # general.name, else the file's stem
    architecture: str  # general.architecture: always "llama" here
    vocab_size: int  # rows of the embedding table
    tokenizer_size: int  # tokens in tokenizer.ggml.tokens (≤ vocab_size)
    quantization: tuple[str, ...]  # the ggml types of its tensors, sorted: ("F32", "Q4_1", "Q8_0")
    license: str  # general.license, or ""
    organization: str  # general.organization, or ""


@dataclass
class GgufCheckpoint:
    """A GGUF file read in full: a transformers `LlamaForCausalLM` could be built from config and tensors."""

    summary: GgufSummary
    config: dict[str, Any]  # LlamaConfig's fields
    # float32, under transformers' Llama names: embed_tokens and lm_head [V, D], q_proj [H·hd, D],
    # k_proj and v_proj [KV·hd, D], o_proj [D, H·hd], gate_proj and up_proj [I, D], down_proj [D, I], norms [D]
    tensors: dict[str, torch.Tensor]
    tokenizer: dict[str, Any]  # a tokenizer.json: `tokenizers.Tokenizer.from_str(json.dumps(tokenizer))`


@dataclass(frozen=True)
class _Checked:
    """Everything read_gguf needs, checked against itself: the summary, the config and the tensor infos."""

    summary: GgufSummary
    config: dict[str, Any]
    tensors: dict[str, TensorInfo]  # by transformers name
    metadata: dict[str, Any]


def _get(metadata: Mapping[str, Any], key: str, kind: type, path: Path, default: Any = None) -> Any:
    """metadata[key] checked to be a `kind` (int: not bool; float: int too); `default` when absent."""
    value = metadata.get(key, default)
    if value is None:
        raise CheckpointError(f"{path}: {key} is missing from its metadata")
    ok = (isinstance(value, int) and not isinstance(value, bool) if kind is int else
          isinstance(value, (int, float)) and not isinstance(value, bool) if kind is float else
          isinstance(value, kind))
    if not ok:
        raise CheckpointError(f"{path}: {key} is {value!r}, not a {kind.__name__}")
    return float(value) if kind is float else value


def _positive(metadata: Mapping[str, Any], key: str, field: str | None, path: Path, default: int | None = None) -> int:
    value: int = _get(metadata, key, int, path, default)
    limit = SHAPE_LIMITS.get(field or "", 1 << 20)
    if not 0 < value <= limit:
        raise CheckpointError(f"{path}: {key} is {value:,}; Variorum reads 1 to {limit:,}")
    return value


def _check_architecture(path: Path, metadata: Mapping[str, Any]) -> None:
    architecture = _get(metadata, "general.architecture", str, path)
    if architecture != "llama":
        raise CheckpointError(f"{path}: is a {architecture} model; Variorum imports llama-architecture GGUF files")
    split_count = metadata.get("split.count", 1)
    if split_count != 1:
        raise CheckpointError(f"{path}: is one part of a GGUF split in {split_count}; join the parts first "
                              "(llama-gguf-split --merge)")
    if metadata.get("llama.expert_count", 0):
        raise CheckpointError(f"{path}: is a mixture-of-experts model ({metadata['llama.expert_count']} "
                              "experts); Variorum imports dense Llama models")
    scaling = metadata.get("llama.rope.scaling.type", "none")
    if scaling != "none" or metadata.get("llama.rope.scale_linear", 1.0) != 1.0:
        what = scaling if scaling != "none" else "linear"
        raise CheckpointError(f"{path}: uses {what} RoPE scaling; Variorum runs Llama with plain RoPE")
    model = metadata.get("tokenizer.ggml.model")
    if model == "llama":
        raise CheckpointError(f"{path}: uses a SentencePiece tokenizer; Variorum imports byte-level BPE GGUF models")
    if model != "gpt2":
        raise CheckpointError(f"{path}: uses a {model or 'missing'} tokenizer (tokenizer.ggml.model); Variorum "
                              "imports byte-level BPE (gpt2) GGUF models")


def _check_types(path: Path, tensors: Mapping[str, TensorInfo]) -> tuple[str, ...]:
    """The sorted distinct type names, all of them in READ_TYPES."""
    types = {info.ggml_type for info in tensors.values()}
    unread = sorted(t.name for t in types - set(READ_TYPES))
    if unread:
        raise CheckpointError(f"{path}: holds {', '.join(unread)} tensors; Variorum reads "
                              f"{', '.join(t.name for t in READ_TYPES)}")
    return tuple(sorted(t.name for t in types))


def _shape(path: Path, metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The model's shape from the `llama.*` keys, under LlamaConfig's names, checked against itself."""
    hidden = _positive(metadata, "llama.embedding_length", "hidden_size", path)
    heads = _positive(metadata, "llama.attention.head_count", "num_attention_heads", path)
    kv_heads = _positive(metadata, "llama.attention.head_count_kv", "num_attention_heads", path, heads)
    eps = _get(metadata, "llama.attention.layer_norm_rms_epsilon", float, path)
    theta = _get(metadata, "llama.rope.freq_base", float, path, DEFAULT_ROPE_THETA)
    if heads % kv_heads:
        raise CheckpointError(f"{path}: {heads} attention heads cannot share {kv_heads} key/value heads")
    if "llama.attention.key_length" not in metadata and hidden % heads:
        raise CheckpointError(f"{path}: {heads} attention heads do not divide the width {hidden}")
    head_dim = _positive(metadata, "llama.attention.key_length", None, path, hidden // heads or 1)
    value_dim = _positive(metadata, "llama.attention.value_length", None, path, head_dim)
    rotated = _positive(metadata, "llama.rope.dimension_count", None, path, head_dim)
    if value_dim != head_dim or rotated != head_dim or head_dim % 2:
        raise CheckpointError(f"{path}: heads of {head_dim} (keys), {value_dim} (values), {rotated} rotated: "
                              "Variorum's Llama rotates whole even-sized heads of one size")
    if not (0 < eps < 1 and 0 < theta < 1e12):
        raise CheckpointError(f"{path}: rms epsilon {eps} or RoPE base {theta} is out of range")
    return {
        "hidden_size": hidden,
        "intermediate_size": _positive(metadata, "llama.feed_forward_length", "intermediate_size", path),
        "num_hidden_layers": _positive(metadata, "llama.block_count", "num_hidden_layers", path),
        "num_attention_heads": heads, "num_key_value_heads": kv_heads, "head_dim": head_dim,
        "rms_norm_eps": eps, "rope_theta": theta,
        "max_position_embeddings": _positive(metadata, "llama.context_length", "max_position_embeddings", path),
    }


def _vocabulary(path: Path, metadata: Mapping[str, Any], found: Mapping[str, TensorInfo]) -> tuple[int, int]:
    """(rows of the embedding table, tokens of the tokenizer), the second no larger than the first."""
    if "token_embd.weight" not in found:
        raise CheckpointError(f"{path}: has no token_embd.weight (the embedding table)")
    vocab = found["token_embd.weight"].shape[0]
    if not 0 < vocab <= SHAPE_LIMITS["vocab_size"]:
        raise CheckpointError(f"{path}: an embedding of {vocab:,} rows; Variorum reads up to "
                              f"{SHAPE_LIMITS['vocab_size']:,}")
    if metadata.get("llama.vocab_size", vocab) != vocab:
        raise CheckpointError(f"{path}: llama.vocab_size is {metadata['llama.vocab_size']} but the embedding "
                              f"has {vocab:,} rows")
    tokens = metadata.get("tokenizer.ggml.tokens")
    if not isinstance(tokens, list) or not tokens:
        raise CheckpointError(f"{path}: no tokenizer.ggml.tokens (the vocabulary)")
    if not all(isinstance(token, str) for token in tokens):
        raise CheckpointError(f"{path}: tokenizer.ggml.tokens holds values that are not strings")
    if len(tokens) > vocab:
        raise CheckpointError(f"{path}: the tokenizer has {len(tokens):,} tokens but the embedding only "
                              f"{vocab:,} rows")
    return vocab, len(tokens)


def _layout(path: Path, found: Mapping[str, TensorInfo], shape: Mapping[str, Any],
            vocab: int) -> dict[str, TensorInfo]:
    """The file's tensors under transformers' names, each of the shape the metadata implies, none left over."""
    if "rope_freqs.weight" in found:  # Llama 3.1's "llama3" RoPE scaling, stored as per-frequency factors
        raise CheckpointError(f"{path}: uses scaled RoPE (rope_freqs.weight, as Llama 3.1 does); Variorum runs "
                              "Llama with plain RoPE")
    hidden, intermediate = shape["hidden_size"], shape["intermediate_size"]
    q_rows = shape["num_attention_heads"] * shape["head_dim"]
    kv_rows = shape["num_key_value_heads"] * shape["head_dim"]
    shapes = {  # transformers name → (GGUF name, [rows, columns])
        "model.embed_tokens.weight": ("token_embd.weight", (vocab, hidden)),
        "model.norm.weight": ("output_norm.weight", (hidden,)),
    }
    layer_shapes = {"attn_norm.weight": (hidden,), "ffn_norm.weight": (hidden,),
                    "attn_q.weight": (q_rows, hidden), "attn_k.weight": (kv_rows, hidden),
                    "attn_v.weight": (kv_rows, hidden), "attn_output.weight": (hidden, q_rows),
                    "ffn_gate.weight": (intermediate, hidden), "ffn_up.weight": (intermediate, hidden),
                    "ffn_down.weight": (hidden, intermediate)}
    for layer in range(shape["num_hidden_layers"]):
        for gguf_name, hf_name in LAYER_TENSORS.items():
            shapes[f"model.layers.{layer}.{hf_name}"] = (f"blk.{layer}.{gguf_name}", layer_shapes[gguf_name])
    if "output.weight" in found:  # untied: its own output projection; tied files have none
        shapes["lm_head.weight"] = ("output.weight", (vocab, hidden))
    tensors: dict[str, TensorInfo] = {}
    for hf_name, (gguf_name, expected) in shapes.items():
        info = found.get(gguf_name)
        if info is None:
            raise CheckpointError(f"{path}: has no {gguf_name} tensor")
        if info.shape != expected:
            raise CheckpointError(f"{path}: {gguf_name} is {list(info.shape)}, its metadata says {list(expected)}")
        tensors[hf_name] = info
    unused = sorted(set(found) - {gguf_name for gguf_name, _ in shapes.values()})
    if unused:
        more = f" and {len(unused) - 3} more" if len(unused) > 3 else ""
        raise CheckpointError(f"{path}: holds tensors Variorum's Llama has no place for: "
                              f"{', '.join(unused[:3])}{more}")
    parameters = sum(math.prod(info.dims) for info in tensors.values())
    if parameters > MAX_PARAMETERS:
        raise CheckpointError(f"{path}: {parameters:,} parameters; Variorum reads up to {MAX_PARAMETERS:,}")
    return tensors


def _check(path: Path) -> _Checked:
    """The header read and checked: everything but the tensor data and the tokenizer's build."""
    header = read_header(path)
    metadata, found = header.metadata, header.tensors
    _check_architecture(path, metadata)
    quantization = _check_types(path, found)
    shape = _shape(path, metadata)
    vocab, token_count = _vocabulary(path, metadata, found)
    tensors = _layout(path, found, shape, vocab)
    config: dict[str, Any] = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": vocab, **shape,
        "tie_word_embeddings": "lm_head.weight" not in tensors, "hidden_act": "silu", "attention_bias": False,
        "mlp_bias": False,
    }
    for key, field in SPECIAL_TOKEN_KEYS.items():
        token_id = metadata.get(key)
        if token_id is not None:
            if not isinstance(token_id, int) or not 0 <= token_id < token_count:
                raise CheckpointError(f"{path}: {key} {token_id!r} is not a token")
            config[field] = token_id
    name = metadata.get("general.name")
    summary = GgufSummary(
        path=path, name=name if isinstance(name, str) and name.strip() else path.stem, architecture="llama",
        vocab_size=vocab, tokenizer_size=token_count, quantization=quantization,
        license=_text(metadata.get("general.license")), organization=_text(metadata.get("general.organization")))
    return _Checked(summary, config, tensors, metadata)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def read_gguf_summary(path: Path) -> GgufSummary:
    """What a GGUF file is, from its header (no tensor dequantized), or a CheckpointError saying why Variorum
    cannot import it."""
    return _check(Path(path)).summary


def _unpermute(weight: np.ndarray, heads: int) -> np.ndarray:
    """Undo llama.cpp's q/k row order (its converter's `permute`, reversed as transformers' GGUF loader does).

    transformers' rotary embedding pairs dimension j of a head with dimension j + head_dim/2 (rotate_half);
    ggml's pairs 2j with 2j+1. The converter therefore stored HF row (half h, index j) of each head at
    row 2j + h. Viewed as [heads, head_dim/2, 2] that is [head, j, h]; swapping the last two axes gives
    [head, h, j], HF's order again.
    """
    rows = weight.shape[0]  # [heads * head_dim, hidden]
    return weight.reshape(heads, rows // heads // 2, 2, *weight.shape[1:]).swapaxes(2, 1).reshape(weight.shape)


def _dequantize(file: Any, info: TensorInfo) -> np.ndarray:
    """One tensor's data as float32 in [rows, columns] order."""
    data = bytearray(info.nbytes)  # writable, so torch can take the array without a copy
    file.seek(info.start)
    if file.readinto(data) != info.nbytes:
        raise CheckpointError(f"{file.name}: cut short while reading {info.name}")
    block, block_bytes = GGML_QUANT_SIZES[info.ggml_type]
    raw = np.frombuffer(data, dtype=np.uint8).reshape(*info.shape[:-1], info.shape[-1] // block * block_bytes)
    with np.errstate(all="ignore"):  # damaged blocks overflow to inf / NaN: refused as such after the import
        values = dequantize(raw, info.ggml_type)  # F32: a view of `data`; the others: a new float32 array
    if values.dtype != np.float32 or values.shape != info.shape:
        raise CheckpointError(f"{file.name}: {info.name} dequantizes to {values.dtype} {values.shape}")
    return values


def read_gguf(path: Path) -> GgufCheckpoint:
    """A GGUF file of a Llama model read in full: config, float32 tensors under transformers' names, tokenizer.

    Raises CheckpointError (one line naming the file) when it is not one Variorum can import.
    """
    path = Path(path)
    checked = _check(path)
    tokenizer = gguf_tokenizer(path, checked.metadata)
    try:  # a vocabulary and merges that do not fit together are refused here, not when the model first runs
        from tokenizers import Tokenizer
        Tokenizer.from_str(json.dumps(tokenizer))
    except Exception as error:  # tokenizers raises its own Exception subclass with the reason
        raise CheckpointError(f"{path}: its tokenizer does not load ({error})") from None
    config = checked.config
    tensors: dict[str, torch.Tensor] = {}
    try:
        with path.open("rb") as file:
            for hf_name, info in checked.tensors.items():
                values = _dequantize(file, info)
                if hf_name.endswith("q_proj.weight"):
                    values = _unpermute(values, config["num_attention_heads"])
                elif hf_name.endswith("k_proj.weight"):
                    values = _unpermute(values, config["num_key_value_heads"])
                tensors[hf_name] = torch.from_numpy(values)
    except OSError as error:
        raise CheckpointError(f"{path}: cannot be read ({error.strerror or error})") from None
    return GgufCheckpoint(checked.summary, config, tensors, tokenizer)
