"""A Llama-family checkpoint as one of our language models: a Llama backbone (engine/backbones/llama.py),
the renumbered vocabulary (engine/checkpoints/vocabulary.py) and a softmax head, tied to the token
embedding when the checkpoint ties its output layer (SmolLM2 does) and its own renumbered rows otherwise.
The result computes the checkpoint's logits for every one of its tokens, under the new ids (checked in
the tests against transformers' `LlamaForCausalLM`).

Two sources give the same thing: a Hugging Face folder (`config.json`, the weights, `tokenizer.json`),
loaded by transformers with its safe unpickler, and a llama.cpp `.gguf` file, dequantized to float32
(engine/checkpoints/gguf_file.py). transformers' separate q/k/v and gate/up matrices are stacked into the
backbone's fused ones.

Refused with one line: what the Llama block here does not compute: an activation other than SiLU, biases
on the projections, rope scaling, a head width other than hidden / heads, tensor-parallel pretraining
splits (`pretraining_tp` > 1 changes nothing in the maths, but transformers computes it in pieces:
accepted), sliding windows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from engine.checkpoints.inspect import CheckpointError, CheckpointInfo
from engine.checkpoints.vocabulary import import_vocabulary, move_rows
from engine.config import ConfigError, ModelConfig
from engine.model import LanguageModel
from engine.tokenizer import VariorumTokenizer


def rope_theta(config: Mapping[str, Any]) -> float:
    """The RoPE base: transformers 5 nests it in `rope_parameters`, earlier releases keep `rope_theta`."""
    nested = config.get("rope_parameters")
    theta = nested.get("rope_theta") if isinstance(nested, dict) else config.get("rope_theta", 10000.0)
    return float(theta) if isinstance(theta, (int, float)) and not isinstance(theta, bool) else -1.0


def _check_options(where: str, config: Mapping[str, Any]) -> None:
    """One line for each option the Llama block here does not compute."""
    scaling = config.get("rope_scaling") or (config.get("rope_parameters") or {})
    rope_type = scaling.get("rope_type", scaling.get("type", "default")) if isinstance(scaling, dict) else "?"
    problems = {
        f"activation {config.get('hidden_act')!r} (Llama's is SiLU)": config.get("hidden_act", "silu") != "silu",
        "biases on the attention projections": bool(config.get("attention_bias")),
        "biases on the MLP projections": bool(config.get("mlp_bias")),
        f"rope scaling {rope_type!r}": rope_type not in ("default", None),
        "a sliding attention window": bool(config.get("sliding_window")),
    }
    for problem, present in problems.items():
        if present:
            raise CheckpointError(f"{where}: {problem} is not supported; Variorum runs plain Llama blocks")


def model_config(where: str, config: Mapping[str, Any]) -> ModelConfig:
    """Our `ModelConfig` for a transformers `LlamaConfig` dict, checked before anything is built."""
    _check_options(where, config)
    try:
        hidden, heads = int(config["hidden_size"]), int(config["num_attention_heads"])
        head_dim = config.get("head_dim") or hidden // heads
        if head_dim * heads != hidden:
            raise CheckpointError(f"{where}: head_dim {head_dim} × {heads} heads is not the width {hidden}; "
                                  "Variorum runs Llama blocks whose heads split the width")
        return ModelConfig(
            vocab_size=int(config["vocab_size"]), n_layer=int(config["num_hidden_layers"]), n_head=heads,
            n_embd=hidden, n_kv_head=int(config.get("num_key_value_heads") or heads),
            mlp_width=int(config["intermediate_size"]), block_size=int(config.get("max_position_embeddings", 2048)),
            rope_theta=rope_theta(config), norm_eps=float(config.get("rms_norm_eps", 1e-6)), dropout=0.0,
            backbone="llama", head="softmax", tie_embeddings=bool(config.get("tie_word_embeddings", False)))
    except (KeyError, TypeError, ValueError) as error:
        if isinstance(error, ConfigError):
            raise CheckpointError(f"{where}: its config does not describe a model Variorum can build ({error})") \
                from None
        raise CheckpointError(f"{where}: its config lacks or mistypes {error}") from None


def _stacked(state: Mapping[str, torch.Tensor], prefix: str, names: tuple[str, ...]) -> torch.Tensor:
    return torch.cat([state[f"{prefix}.{name}.weight"] for name in names], dim=0)


def our_state(hf_state: Mapping[str, torch.Tensor], config: ModelConfig, rows: list[int]) -> dict[str, torch.Tensor]:
    """transformers' `LlamaForCausalLM` tensors under our names, the vocabulary rows moved to the new ids."""
    state = {"backbone.embed.weight": move_rows(hf_state["model.embed_tokens.weight"], rows),
             "backbone.norm.weight": hf_state["model.norm.weight"]}
    for i in range(config.n_layer):
        theirs, ours = f"model.layers.{i}", f"backbone.blocks.{i}"
        state[f"{ours}.attn_norm.weight"] = hf_state[f"{theirs}.input_layernorm.weight"]
        state[f"{ours}.qkv.weight"] = _stacked(hf_state, f"{theirs}.self_attn", ("q_proj", "k_proj", "v_proj"))
        state[f"{ours}.attn_out.weight"] = hf_state[f"{theirs}.self_attn.o_proj.weight"]
        state[f"{ours}.mlp_norm.weight"] = hf_state[f"{theirs}.post_attention_layernorm.weight"]
        state[f"{ours}.gate_up.weight"] = _stacked(hf_state, f"{theirs}.mlp", ("gate_proj", "up_proj"))
        state[f"{ours}.down.weight"] = hf_state[f"{theirs}.mlp.down_proj.weight"]
    if not config.tie_embeddings:
        state["head.proj.weight"] = move_rows(hf_state["lm_head.weight"], rows)
    return state


def hf_llama_twin(model: LanguageModel) -> Any:
    """transformers' `LlamaForCausalLM` holding `model`'s backbone weights (fused matrices split back) and an
    output layer tied to its embedding: the base's own softmax, whatever head `model` has (benchmarks)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = model.config
    head_dim = config.n_embd // config.n_head
    settings: dict[str, Any] = {  # rope_theta as a keyword: transformers 5 moves it into rope_parameters itself
        "vocab_size": config.vocab_size, "hidden_size": config.n_embd, "intermediate_size": config.mlp_hidden,
        "num_hidden_layers": config.n_layer, "num_attention_heads": config.n_head,
        "num_key_value_heads": config.kv_heads, "max_position_embeddings": config.block_size,
        "rope_theta": config.rope_theta, "rms_norm_eps": config.norm_eps, "tie_word_embeddings": True,
        "bos_token_id": 0, "eos_token_id": 0, "pad_token_id": 0}
    twin = LlamaForCausalLM(LlamaConfig(**settings))
    ours = model.state_dict()
    state = {"model.embed_tokens.weight": ours["backbone.embed.weight"],
             "model.norm.weight": ours["backbone.norm.weight"]}
    sizes = [config.n_head * head_dim, config.kv_heads * head_dim, config.kv_heads * head_dim]
    for i in range(config.n_layer):
        theirs, mine = f"model.layers.{i}", f"backbone.blocks.{i}"
        q, k, v = ours[f"{mine}.qkv.weight"].split(sizes)
        gate, up = ours[f"{mine}.gate_up.weight"].chunk(2)
        state |= {f"{theirs}.input_layernorm.weight": ours[f"{mine}.attn_norm.weight"],
                  f"{theirs}.self_attn.q_proj.weight": q, f"{theirs}.self_attn.k_proj.weight": k,
                  f"{theirs}.self_attn.v_proj.weight": v,
                  f"{theirs}.self_attn.o_proj.weight": ours[f"{mine}.attn_out.weight"],
                  f"{theirs}.post_attention_layernorm.weight": ours[f"{mine}.mlp_norm.weight"],
                  f"{theirs}.mlp.gate_proj.weight": gate, f"{theirs}.mlp.up_proj.weight": up,
                  f"{theirs}.mlp.down_proj.weight": ours[f"{mine}.down.weight"]}
    twin.load_state_dict(state, strict=False)
    twin.tie_weights()
    return twin.eval()


def _read(info: CheckpointInfo) -> tuple[dict[str, Any], dict[str, torch.Tensor], dict[str, Any] | None]:
    """(config dict, transformers-named float tensors, tokenizer.json-shaped spec or None = read the folder's)."""
    if info.path.suffix == ".gguf":
        from engine.checkpoints.gguf_file import read_gguf

        gguf = read_gguf(info.path)
        return gguf.config, gguf.tensors, gguf.tokenizer
    from transformers import LlamaForCausalLM

    from engine.backbones.hf_checkpoint import load_hf_pretrained
    from engine.checkpoints.inspect import read_config

    config = read_config(info.path)
    model_config(str(info.path), config)  # refuse before loading any weight
    model = load_hf_pretrained(LlamaForCausalLM, info.path, "Llama")
    return config, {name: tensor.float() for name, tensor in model.state_dict().items()}, None


def import_llama(info: CheckpointInfo) -> tuple[LanguageModel, VariorumTokenizer]:
    """The checkpoint as a softmax-head language model over its renumbered vocabulary, and that tokenizer."""
    if info.family != "llama":
        raise CheckpointError(f"{info.path}: a {info.architecture} checkpoint, not Llama")
    hf_config, hf_state, tokenizer_spec = _read(info)
    checked = model_config(str(info.path), hf_config)
    vocabulary = import_vocabulary(info, tokenizer_spec)
    rows = vocabulary.source_rows
    config = ModelConfig(**{**checked.to_dict(), "vocab_size": len(rows)})
    missing = [name for name in ("model.embed_tokens.weight", "model.norm.weight") if name not in hf_state]
    if missing or (not config.tie_embeddings and "lm_head.weight" not in hf_state):
        raise CheckpointError(f"{info.path}: its weights lack {(missing or ['lm_head.weight'])[0]}")
    try:
        state = our_state(hf_state, config, rows)
    except KeyError as error:
        raise CheckpointError(f"{info.path}: its weights lack {error}") from None
    model = LanguageModel(config)
    try:
        result = model.load_state_dict(state, strict=False)
    except RuntimeError as error:  # shapes that disagree with the config
        reason = str(error).strip().splitlines()[-1].strip()[:200]
        raise CheckpointError(f"{info.path}: its weights do not fit its config ({reason})") from None
    untouched = [name for name in result.missing_keys if name != "head.proj.weight"]  # tied: the embedding
    if untouched or result.unexpected_keys:
        odd = (untouched or result.unexpected_keys)[0]
        raise CheckpointError(f"{info.path}: its weights do not fit its config ({odd})")
    return model.eval(), vocabulary.tokenizer
