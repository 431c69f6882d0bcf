"""Tiny random GPT-2, Llama and BART checkpoints written by transformers' `save_pretrained`, and a folder laid
out like the Hugging Face cache (snapshots linking into blobs): no download anywhere."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
import torch
from tokenizers import ByteLevelBPETokenizer
from transformers import (
    BartConfig,
    BartForConditionalGeneration,
    GPT2Config,
    GPT2LMHeadModel,
    LlamaConfig,
    LlamaForCausalLM,
)

TEXT = ["The cat sat on the mat.", "A dog ran home early.", "She went to the park and read a book."] * 20


def _tokenizer(special_tokens: list[str], vocab_size: int = 300) -> ByteLevelBPETokenizer:
    tokenizer = ByteLevelBPETokenizer()
    tokenizer.train_from_iterator(TEXT, vocab_size=vocab_size, min_frequency=1, special_tokens=special_tokens)
    return tokenizer


def write_gpt2(folder: Path, layers: int = 1) -> Path:
    """GPT2LMHeadModel (`layers` × 8) with its byte-level BPE as vocab.json + merges.txt, `<|endoftext|>` last
    (as in GPT-2, where it is id 50256)."""
    folder.mkdir(parents=True, exist_ok=True)
    _tokenizer([]).save_model(str(folder))
    vocab = json.loads((folder / "vocab.json").read_text(encoding="utf-8"))
    eos = vocab["<|endoftext|>"] = len(vocab)
    (folder / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    config = GPT2Config(vocab_size=len(vocab), n_positions=32, n_embd=8, n_layer=layers, n_head=2, bos_token_id=eos,
                        eos_token_id=eos)
    GPT2LMHeadModel(config).save_pretrained(folder)
    return folder


def write_bart(folder: Path, **options: object) -> Path:
    """BartForConditionalGeneration (1 + 1 × 8) with its tokenizer as tokenizer.json (BART's specials first);
    `options` replace BartConfig settings."""
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = _tokenizer(["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    tokenizer.save(str(folder / "tokenizer.json"))
    settings: dict[str, object] = {
        "vocab_size": tokenizer.get_vocab_size(), "d_model": 8, "encoder_layers": 1, "decoder_layers": 1,
        "encoder_attention_heads": 2, "decoder_attention_heads": 2, "encoder_ffn_dim": 16, "decoder_ffn_dim": 16,
        "max_position_embeddings": 32, "pad_token_id": 1, "bos_token_id": 0, "eos_token_id": 2,
        "decoder_start_token_id": 2}
    config = BartConfig(**{**settings, **options})
    BartForConditionalGeneration(config).save_pretrained(folder)
    return folder


def write_llama(folder: Path, tied: bool = True, **options: object) -> Path:
    """LlamaForCausalLM (2 × 32, 4 query / 2 key-value heads, RoPE base 500) with its tokenizer as tokenizer.json,
    `<|endoftext|>` at id 0 as in SmolLM2, and the digit-splitting pre-tokenizer SmolLM2 uses; weights drawn wide
    (std 0.3) so that greedy decoding never meets a near tie. `options` replace LlamaConfig settings."""
    from tokenizers import pre_tokenizers

    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = _tokenizer(["<|endoftext|>", "<|im_start|>", "<|im_end|>"])
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(  # type: ignore[assignment]
        [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(add_prefix_space=False)])
    tokenizer.save(str(folder / "tokenizer.json"))
    settings: dict[str, object] = {
        "vocab_size": tokenizer.get_vocab_size(), "hidden_size": 32, "intermediate_size": 48,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 64,
        "rope_theta": 500.0, "rms_norm_eps": 1e-5, "tie_word_embeddings": tied, "initializer_range": 0.3,
        "bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 2}
    torch.manual_seed(0)
    LlamaForCausalLM(LlamaConfig(**{**settings, **options})).save_pretrained(folder)
    return folder


def add_to_cache(cache: Path, name: str, checkpoint: Path, commit: str = "0123abcd", main: bool = True) -> Path:
    """Lay `checkpoint`'s files out as the hub cache does: blobs by hash, snapshot links, refs/main."""
    model = cache / ("models--" + name.replace("/", "--"))
    snapshot = model / "snapshots" / commit
    snapshot.mkdir(parents=True)
    (model / "blobs").mkdir(exist_ok=True)
    for file in checkpoint.iterdir():
        blob = model / "blobs" / hashlib.sha256(file.read_bytes()).hexdigest()
        shutil.copyfile(file, blob)
        (snapshot / file.name).symlink_to(Path("..") / ".." / "blobs" / blob.name)
    if main:
        (model / "refs").mkdir(exist_ok=True)
        (model / "refs" / "main").write_text(commit)
    return snapshot


@pytest.fixture(scope="session")
def gpt2_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_gpt2(tmp_path_factory.mktemp("ckpt") / "tiny-gpt2")


@pytest.fixture(scope="session")
def bart_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_bart(tmp_path_factory.mktemp("ckpt") / "tiny-bart")


@pytest.fixture(scope="session")
def llama_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_llama(tmp_path_factory.mktemp("ckpt") / "tiny-llama")
