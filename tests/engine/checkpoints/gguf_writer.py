"""Tiny GGUF files for tests, written the way llama.cpp's `convert_hf_to_gguf.py` writes a Llama model.

`write_llama_gguf(model, tokenizer_json, path)` turns a transformers `LlamaForCausalLM` and the
`tokenizer.json` of its byte-level BPE tokenizer (as a dict) into one GGUF file with `gguf.GGUFWriter`:

- metadata: `general.architecture`/`general.name`, the `llama.*` shape keys (`context_length`,
  `embedding_length`, `block_count`, `feed_forward_length`, `attention.head_count`,
  `attention.head_count_kv`, `attention.layer_norm_rms_epsilon`, `rope.freq_base`, `rope.dimension_count`,
  `vocab_size`; `attention.key_length`/`value_length` only when `head_dim` is not width / heads, as the
  converter does) and `tokenizer.ggml.*` (`model` "gpt2", `pre`, `tokens` by id, `token_type`: CONTROL for
  special added tokens, USER_DEFINED for the other added tokens, NORMAL for the rest, `merges` as
  "a b" strings, `bos/eos/padding_token_id` from the model's config, `add_bos_token`);
- tensors under llama.cpp's names (`token_embd.weight`, `blk.{i}.attn_q.weight`, …, `output_norm.weight`,
  `output.weight` only when the embeddings are untied), q and k rows permuted into ggml's RoPE order
  exactly as the converter's `permute`, the 1-D norms always F32, every 2-D weight stored as `tensor_type`
  ("F32", "F16" or any type `gguf.quants.quantize` implements: Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, BF16, MXFP4, …;
  the K-quants have no numpy quantizer), or as `tensor_types[gguf_name]` for the tensors named there.

For files that must be wrong in one way (refusal tests): `architecture` and `tokenizer_model` replace
"llama" and "gpt2", `skip` leaves the named GGUF tensors out, and `metadata` sets extra keys last, over the
writer's own (str, bool, int → uint32, float → float32; None deletes the key).

A quantized weight's row length must be a whole number of blocks (32 for the legacy types), so choose
widths such as 64 and 96; the writer raises ValueError rather than silently keeping such a tensor in F32.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

import gguf
import numpy as np
from transformers import LlamaForCausalLM

LAYER_NAMES = {  # transformers name inside model.layers.{i}. → llama.cpp's inside blk.{i}.
    "input_layernorm.weight": "attn_norm.weight",
    "self_attn.q_proj.weight": "attn_q.weight",
    "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.v_proj.weight": "attn_v.weight",
    "self_attn.o_proj.weight": "attn_output.weight",
    "post_attention_layernorm.weight": "ffn_norm.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight",
    "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
}


def gguf_name(hf_name: str) -> str:
    """llama.cpp's name of a transformers Llama tensor: "model.layers.3.mlp.up_proj.weight" → "blk.3.ffn_up.weight"."""
    fixed = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
             "lm_head.weight": "output.weight"}
    if hf_name in fixed:
        return fixed[hf_name]
    _, _, layer, rest = hf_name.split(".", 3)
    return f"blk.{layer}.{LAYER_NAMES[rest]}"


def permute(weight: np.ndarray, n_head: int, n_head_kv: int | None = None) -> np.ndarray:
    """llama.cpp's converter's q/k row permutation (HF's rotate-half order → ggml's adjacent pairs)."""
    if n_head_kv is not None and n_head != n_head_kv:
        n_head = n_head_kv
    return (weight.reshape(n_head, 2, weight.shape[0] // n_head // 2, *weight.shape[1:])
            .swapaxes(1, 2).reshape(weight.shape))


def _rope_theta(config: Any) -> float:
    parameters = getattr(config, "rope_parameters", None)  # transformers 5; 4.x keeps rope_theta
    if isinstance(parameters, dict) and "rope_theta" in parameters:
        return float(parameters["rope_theta"])
    return float(config.rope_theta)


def _tokens(tokenizer_json: Mapping[str, Any]) -> tuple[list[str], list[int], list[str]]:
    """(tokens by id, their gguf token types, merges as "a b") of a byte-level BPE tokenizer.json."""
    model = tokenizer_json["model"]
    by_id: dict[int, str] = {token_id: token for token, token_id in model["vocab"].items()}
    types: dict[int, int] = {}
    for added in tokenizer_json.get("added_tokens", []):
        by_id[added["id"]] = added["content"]
        types[added["id"]] = gguf.TokenType.CONTROL if added["special"] else gguf.TokenType.USER_DEFINED
    if sorted(by_id) != list(range(len(by_id))):
        raise ValueError("the tokenizer's ids are not 0 … n-1 without gaps")
    tokens = [by_id[i] for i in range(len(by_id))]
    token_types = [int(types.get(i, gguf.TokenType.NORMAL)) for i in range(len(tokens))]
    merges = [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]
    return tokens, token_types, merges


def _add(writer: gguf.GGUFWriter, key: str, value: Any) -> None:
    if value is None:
        writer.kv_data[0].pop(key, None)
    elif isinstance(value, str):
        writer.add_string(key, value)
    elif isinstance(value, bool):
        writer.add_bool(key, value)
    elif isinstance(value, int):
        writer.add_uint32(key, value)
    elif isinstance(value, float):
        writer.add_float32(key, value)
    else:
        writer.add_array(key, value)


def _write_metadata(writer: gguf.GGUFWriter, config: Any, tokenizer_json: Mapping[str, Any], pre: str,
                    tokenizer_model: str, name: str, add_bos: bool) -> None:
    heads = config.num_attention_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    writer.add_name(name)
    writer.add_context_length(config.max_position_embeddings)
    writer.add_embedding_length(config.hidden_size)
    writer.add_block_count(config.num_hidden_layers)
    writer.add_feed_forward_length(config.intermediate_size)
    writer.add_head_count(heads)
    writer.add_head_count_kv(config.num_key_value_heads)
    writer.add_rope_freq_base(_rope_theta(config))
    writer.add_layer_norm_rms_eps(config.rms_norm_eps)
    writer.add_vocab_size(config.vocab_size)
    writer.add_rope_dimension_count(head_dim)
    if head_dim != config.hidden_size // heads:
        writer.add_key_length(head_dim)
        writer.add_value_length(head_dim)
    tokens, token_types, merges = _tokens(tokenizer_json)
    writer.add_tokenizer_model(tokenizer_model)
    writer.add_tokenizer_pre(pre)
    writer.add_token_list(tokens)
    writer.add_token_types(token_types)
    writer.add_token_merges(merges)
    for which, add in (("bos", writer.add_bos_token_id), ("eos", writer.add_eos_token_id),
                       ("pad", writer.add_pad_token_id)):
        token_id = getattr(config, f"{which}_token_id", None)
        if isinstance(token_id, int):
            add(token_id)
    writer.add_add_bos_token(add_bos)


def _stored(weight: np.ndarray, qtype: gguf.GGMLQuantizationType, hf_name: str) -> np.ndarray:
    """A weight as the file holds it: float32 (always for the 1-D norms, as in llama.cpp), float16, or blocks."""
    if weight.ndim == 1 or qtype == gguf.GGMLQuantizationType.F32:
        return np.ascontiguousarray(weight, dtype=np.float32)
    if qtype == gguf.GGMLQuantizationType.F16:
        return weight.astype(np.float16)
    block = gguf.GGML_QUANT_SIZES[qtype][0]
    if weight.shape[-1] % block:
        raise ValueError(f"{hf_name}: rows of {weight.shape[-1]} are not whole {qtype.name} blocks of {block}")
    return gguf.quants.quantize(weight, qtype)


def write_llama_gguf(model: LlamaForCausalLM, tokenizer_json: Mapping[str, Any], path: Path,
                     tensor_type: str = "F32", pre: str = "gpt2", *,
                     tensor_types: Mapping[str, str] | None = None, name: str = "tiny-llama",
                     add_bos: bool = False, architecture: str = "llama", tokenizer_model: str = "gpt2",
                     skip: Collection[str] = (), metadata: Mapping[str, Any] | None = None) -> Path:
    """`model` and its tokenizer as a llama.cpp GGUF file at `path` (module docstring); returns `path`."""
    config = model.config
    writer = gguf.GGUFWriter(path, architecture)
    _write_metadata(writer, config, tokenizer_json, pre, tokenizer_model, name, add_bos)
    for key, value in (metadata or {}).items():
        _add(writer, key, value)

    state = {k: v.detach().float().numpy() for k, v in model.state_dict().items() if k.endswith(".weight")}
    if config.tie_word_embeddings:
        state.pop("lm_head.weight", None)
    heads, kv_heads = config.num_attention_heads, config.num_key_value_heads
    for hf_name, weight in state.items():
        name_in_file = gguf_name(hf_name)
        if name_in_file in skip:
            continue
        if hf_name.endswith(("q_proj.weight", "k_proj.weight")):  # ggml's RoPE pairs adjacent rows
            state[hf_name] = permute(weight, heads, heads if "q_proj" in hf_name else kv_heads)
        qtype = gguf.GGMLQuantizationType[(tensor_types or {}).get(name_in_file, tensor_type)]
        stored = _stored(state[hf_name], qtype, hf_name)
        writer.add_tensor(name_in_file, stored, raw_dtype=qtype if stored.dtype == np.uint8 else None)

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
