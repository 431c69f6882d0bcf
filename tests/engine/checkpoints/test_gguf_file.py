"""A llama.cpp GGUF file of a tiny random Llama reads back into its exact weights (F32), into what gguf and
transformers' own GGUF loader make of it (Q8_0, Q4_1), into a tokenizer that encodes like the original,
and every file it cannot import is refused in one line naming the file."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import gguf
import numpy as np
import pytest
import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaForCausalLM

from engine.checkpoints import gguf_file
from engine.checkpoints.gguf_file import (
    READ_TYPES,
    GgufSummary,
    read_gguf,
    read_gguf_summary,
)
from engine.checkpoints.gguf_header import read_header
from engine.checkpoints.gguf_search import find_gguf_files
from engine.checkpoints.inspect import CheckpointError
from tests.engine.checkpoints.gguf_writer import gguf_name, write_llama_gguf

TEXT = ["The cat sat on the mat.", "A dog ran home early in 1964.", "She read 42 books in the park, and 7 more!",
        "Numbers like 2024 and 365 days."] * 20
SENTENCES = ["The cat sat on the mat.", "in 1964", "She read 42 books, then 1234567 more!", "a <mark> dog"]


def _train(pre: str) -> dict[str, Any]:
    """A byte-level BPE of about 300 tokens, `<|endoftext|>` id 0 (special), `<mark>` a plain added token;
    for "smollm" the digits are split one by one before the byte-level regex, as llama.cpp does."""
    tokenizer = Tokenizer(models.BPE())
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tokenizer.pre_tokenizer = (pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), byte_level])
                               if pre == "smollm" else byte_level)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, min_frequency=1, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tokenizer.train_from_iterator(TEXT, trainer)
    tokenizer.add_tokens(["<mark>"])
    spec: dict[str, Any] = json.loads(tokenizer.to_str())
    return spec


def _model(vocab_size: int, tied: bool = True, head_dim: int | None = None) -> LlamaForCausalLM:
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=vocab_size, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                         rms_norm_eps=1e-5, rope_theta=5000.0, tie_word_embeddings=tied, bos_token_id=0,
                         eos_token_id=0, pad_token_id=0, head_dim=head_dim or 16)
    model = LlamaForCausalLM(config).eval()
    with torch.no_grad():  # norms start at 1.0: make them differ so a swapped norm would show
        for name, parameter in model.named_parameters():
            if "norm" in name:
                parameter.uniform_(0.5, 1.5)
    return model


@pytest.fixture(scope="module")
def gpt2_tokenizer() -> dict[str, Any]:
    return _train("gpt2")


def _state(model: LlamaForCausalLM) -> dict[str, torch.Tensor]:
    state = {k: v for k, v in model.state_dict().items() if k.endswith(".weight")}
    if model.config.tie_word_embeddings:
        state.pop("lm_head.weight", None)
    return state


def _logits(model: LlamaForCausalLM, ids: list[int]) -> torch.Tensor:
    with torch.no_grad():
        logits: torch.Tensor = model(torch.tensor([ids])).logits
    return logits


def _built(checkpoint: gguf_file.GgufCheckpoint) -> LlamaForCausalLM:
    """A transformers Llama from our config and tensors (what the Llama backbone import does)."""
    model = LlamaForCausalLM(LlamaConfig(**checkpoint.config)).eval()
    missing, unexpected = model.load_state_dict(checkpoint.tensors, strict=False)
    assert not unexpected and set(missing) <= ({"lm_head.weight"} if checkpoint.config["tie_word_embeddings"]
                                               else set())
    return model


@pytest.mark.parametrize(("tied", "head_dim"), [(True, None), (False, None), (True, 32)])
def test_f32_reads_back_the_exact_weights_and_config(gpt2_tokenizer: dict[str, Any], tmp_path: Path, tied: bool,
                                                     head_dim: int | None) -> None:
    vocab = len(gpt2_tokenizer["model"]["vocab"]) + 1  # <mark> is added after the trained vocabulary
    model = _model(vocab, tied, head_dim)
    path = write_llama_gguf(model, gpt2_tokenizer, tmp_path / "tiny.gguf")
    checkpoint = read_gguf(path)

    expected = _state(model)
    assert checkpoint.tensors.keys() == expected.keys()
    assert ("lm_head.weight" in checkpoint.tensors) is not tied
    for name, weight in expected.items():
        assert checkpoint.tensors[name].dtype == torch.float32
        assert torch.equal(checkpoint.tensors[name], weight), name  # q/k un-permuted exactly
    config = model.config
    for field in ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                  "num_key_value_heads", "head_dim", "max_position_embeddings", "tie_word_embeddings",
                  "hidden_act", "attention_bias", "mlp_bias", "bos_token_id", "eos_token_id", "pad_token_id"):
        assert checkpoint.config[field] == getattr(config, field), field
    assert checkpoint.config["rms_norm_eps"] == pytest.approx(1e-5, rel=1e-6)  # stored as float32
    assert checkpoint.config["rope_theta"] == 5000.0
    assert checkpoint.config["architectures"] == ["LlamaForCausalLM"] and checkpoint.config["model_type"] == "llama"
    ids = [5, 17, 42, 99, 3, 250]
    assert torch.allclose(_logits(_built(checkpoint), ids), _logits(model, ids), atol=1e-6)

    summary = read_gguf_summary(path)
    assert summary == checkpoint.summary == GgufSummary(path, "tiny-llama", "llama", vocab, vocab, ("F32",), "", "")


def _assert_gguf_dequantizes_the_same(path: Path, model: LlamaForCausalLM,
                                      checkpoint: gguf_file.GgufCheckpoint) -> None:
    """gguf's own reader and dequantize, q/k un-permuted as transformers does, give exactly our tensors."""
    reader = gguf.GGUFReader(path)
    config = model.config
    by_gguf_name = {gguf_name(name): name for name in _state(model)}
    for tensor in reader.tensors:
        values = gguf.quants.dequantize(tensor.data, tensor.tensor_type)
        heads = {"attn_q": config.num_attention_heads, "attn_k": config.num_key_value_heads}.get(
            tensor.name.split(".")[-2])
        if heads:
            values = values.reshape(heads, values.shape[0] // heads // 2, 2, -1).swapaxes(2, 1).reshape(values.shape)
        assert np.array_equal(checkpoint.tensors[by_gguf_name[tensor.name]].numpy(), values), tensor.name
    assert len(reader.tensors) == len(checkpoint.tensors)


@pytest.mark.parametrize(("tensor_type", "codes"), [("Q8_0", 127), ("Q4_1", 15)])
def test_quantized_tensors_are_gguf_dequantized_and_match_transformers_loader(
        gpt2_tokenizer: dict[str, Any], tmp_path: Path, tensor_type: str, codes: int) -> None:
    vocab = len(gpt2_tokenizer["model"]["vocab"]) + 1
    model = _model(vocab, tied=False)
    path = write_llama_gguf(model, gpt2_tokenizer, tmp_path / f"tiny.{tensor_type}.gguf", tensor_type)
    checkpoint = read_gguf(path)
    assert checkpoint.summary.quantization == tuple(sorted(("F32", tensor_type)))

    _assert_gguf_dequantizes_the_same(path, model, checkpoint)

    # …within the quantisation error of the originals: one code step of the tensor's range at most
    for name, weight in _state(model).items():
        error = (checkpoint.tensors[name] - weight).abs().max().item()
        if weight.ndim == 1:
            assert error == 0, name  # norms stay F32
        else:
            step = ((weight.max() - weight.min()) if tensor_type == "Q4_1" else 2 * weight.abs().max()) / codes
            assert 0 < error <= step.item(), name

    # transformers' own GGUF loader, on the same file, computes the same logits as a Llama built from ours
    theirs = LlamaForCausalLM.from_pretrained(tmp_path, gguf_file=path.name, dtype=torch.float32).eval()
    ids = [5, 17, 42, 99, 3, 250, 0, 1]
    assert torch.allclose(_logits(_built(checkpoint), ids), _logits(theirs, ids), atol=1e-5, rtol=0)


@pytest.mark.parametrize("tensor_type", ["F16", "BF16", "Q4_0", "Q5_0", "Q5_1"])
def test_the_other_writable_types_read_as_gguf_dequantizes_them(gpt2_tokenizer: dict[str, Any], tmp_path: Path,
                                                                tensor_type: str) -> None:
    model = _model(len(gpt2_tokenizer["model"]["vocab"]) + 1, tied=False)
    path = write_llama_gguf(model, gpt2_tokenizer, tmp_path / "tiny.gguf", tensor_type)
    checkpoint = read_gguf(path)
    _assert_gguf_dequantizes_the_same(path, model, checkpoint)
    error = max((checkpoint.tensors[k] - w).abs().max().item() for k, w in _state(model).items())
    assert 0 < error < 0.05


@pytest.mark.parametrize("pre", ["gpt2", "smollm"])
def test_the_tokenizer_encodes_and_decodes_like_the_original(tmp_path: Path, pre: str) -> None:
    spec = _train(pre)
    original = Tokenizer.from_str(json.dumps(spec))
    path = write_llama_gguf(_model(original.get_vocab_size()), spec, tmp_path / "tiny.gguf", pre=pre)
    tokenizer_json = read_gguf(path).tokenizer
    ours = Tokenizer.from_str(json.dumps(tokenizer_json))

    assert ours.get_vocab() == original.get_vocab()
    for sentence in SENTENCES:
        assert ours.encode(sentence).ids == original.encode(sentence).ids, sentence
        assert ours.decode(ours.encode(sentence).ids) == sentence
    digits = ours.encode("in 1964").tokens
    assert (digits[-4:] == ["1", "9", "6", "4"]) is (pre == "smollm")  # llama.cpp's smollm split
    added = {t["content"]: t["special"] for t in tokenizer_json["added_tokens"]}
    assert added == {"<|endoftext|>": True, "<mark>": False}


def test_llama3_pre_uses_the_llama3_split(gpt2_tokenizer: dict[str, Any], tmp_path: Path) -> None:
    path = write_llama_gguf(_model(len(gpt2_tokenizer["model"]["vocab"]) + 1), gpt2_tokenizer,
                            tmp_path / "tiny.gguf", pre="llama-bpe", add_bos=True)
    ours = Tokenizer.from_str(json.dumps(read_gguf(path).tokenizer))
    pieces = ours.pre_tokenizer.pre_tokenize_str("In 1234567 THE'S")  # digits in threes, contractions any case
    assert [p for p, _ in pieces] == ["In", "Ġ", "123", "456", "7", "ĠTHE", "'S"]
    assert ours.encode("the cat").ids[0] == 0  # add_bos_token: <|endoftext|> (bos) first


def test_every_allowed_type_dequantizes() -> None:
    for qtype in READ_TYPES:
        block, size = gguf.GGML_QUANT_SIZES[qtype]
        values = gguf.quants.dequantize(np.zeros((2, 256 // block * size), np.uint8), qtype)
        assert values.shape == (2, 256) and values.dtype == np.float32, qtype.name


def _refusal(path: Path) -> str:
    with pytest.raises(CheckpointError) as caught:
        read_gguf(path)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(str(path)), message
    with pytest.raises(CheckpointError) as again:
        read_gguf_summary(path)
    assert str(again.value) == message  # the header alone is enough to refuse
    return message


@pytest.mark.parametrize(("options", "says"), [
    ({"architecture": "gemma3"}, "is a gemma3 model; Variorum imports llama-architecture GGUF files"),
    ({"tensor_types": {"blk.0.ffn_up.weight": "MXFP4"}}, "holds MXFP4 tensors; Variorum reads F32, F16, BF16"),
    ({"tokenizer_model": "llama"}, "uses a SentencePiece tokenizer; Variorum imports byte-level BPE GGUF models"),
    ({"skip": {"blk.1.ffn_down.weight"}}, "has no blk.1.ffn_down.weight tensor"),
    ({"metadata": {"llama.rope.scaling.type": "linear", "llama.rope.scaling.factor": 4.0}}, "linear RoPE scaling"),
    ({"metadata": {"llama.vocab_size": 512}}, "llama.vocab_size is 512 but the embedding has"),
    ({"metadata": {"llama.attention.head_count": 3, "llama.attention.head_count_kv": 3}}, "do not divide the width"),
    ({"metadata": {"llama.attention.head_count_kv": 3}}, "4 attention heads cannot share 3 key/value heads"),
    ({"metadata": {"llama.block_count": None}}, "llama.block_count is missing from its metadata"),
    ({"metadata": {"split.count": 3}}, "is one part of a GGUF split in 3"),
])
def test_files_it_cannot_import_are_refused_in_one_line(gpt2_tokenizer: dict[str, Any], tmp_path: Path,
                                                        options: dict[str, Any], says: str) -> None:
    model = _model(len(gpt2_tokenizer["model"]["vocab"]) + 1)
    path = write_llama_gguf(model, gpt2_tokenizer, tmp_path / "bad.gguf", **options)
    assert says in _refusal(path)


def test_damaged_or_cut_short_files_are_refused(gpt2_tokenizer: dict[str, Any], tmp_path: Path) -> None:
    model = _model(len(gpt2_tokenizer["model"]["vocab"]) + 1)
    whole = write_llama_gguf(model, gpt2_tokenizer, tmp_path / "whole.gguf").read_bytes()
    for cut in (30, 2000, len(whole) // 2, len(whole) - 8):
        (tmp_path / "cut.gguf").write_bytes(whole[:cut])
        assert "cut short" in _refusal(tmp_path / "cut.gguf")
    (tmp_path / "noise.gguf").write_bytes(np.random.default_rng(0).bytes(10_000))
    assert _refusal(tmp_path / "noise.gguf").endswith("not a GGUF file (it does not start with 'GGUF')")
    (tmp_path / "empty.gguf").write_bytes(b"")
    assert "not a GGUF file" in _refusal(tmp_path / "empty.gguf")

    # a token list claiming 2^40 entries is refused at once, not read entry by entry
    key = b"tokenizer.ggml.tokens"
    at = whole.index(key) + len(key) + 8  # past the value type (array) and the item type (string)
    (tmp_path / "huge.gguf").write_bytes(whole[:at] + (1 << 40).to_bytes(8, "little") + whole[at + 8:])
    started = time.monotonic()
    assert "tokenizer.ggml.tokens says it has 1,099,511,627,776 items" in _refusal(tmp_path / "huge.gguf")
    assert time.monotonic() - started < 1


def test_the_header_parser_agrees_with_gguf_reader(gpt2_tokenizer: dict[str, Any], tmp_path: Path) -> None:
    model = _model(len(gpt2_tokenizer["model"]["vocab"]) + 1, tied=False)
    path = write_llama_gguf(model, gpt2_tokenizer, tmp_path / "tiny.gguf", "Q4_1",
                            metadata={"general.license": "mit", "general.organization": "Acme"})
    header = read_header(path)
    reader = gguf.GGUFReader(path)
    fields = {k: f.contents() for k, f in reader.fields.items() if not k.startswith("GGUF.")}
    assert fields.keys() == header.metadata.keys()
    for key, value in fields.items():
        assert header.metadata[key] == (pytest.approx(value) if isinstance(value, float) else value), key
    assert [(t.name, tuple(t.shape.tolist()), t.tensor_type, t.data_offset, t.n_bytes) for t in reader.tensors] == [
        (i.name, i.dims, i.ggml_type, i.start, i.nbytes) for i in header.tensors.values()]
    summary = read_gguf_summary(path)
    assert (summary.license, summary.organization) == ("mit", "Acme")


def _touch(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"GGUF")
    return path


def test_find_gguf_files_looks_where_writers_tools_keep_them(tmp_path: Path) -> None:
    home = tmp_path / "home"
    hub = home / ".cache/huggingface/hub/models--acme--tiny-GGUF"
    blob = _touch(hub / "blobs/0123")
    snapshot = hub / "snapshots/abc"
    snapshot.mkdir(parents=True)
    (snapshot / "tiny.Q4_1.gguf").symlink_to(blob)
    (snapshot / "again.gguf").symlink_to(blob)  # the same blob twice: listed once
    _touch(snapshot / "sub/tiny.Q8_0.gguf")
    (snapshot / "broken.gguf").symlink_to(hub / "blobs/missing")  # an incomplete download: skipped
    studio = _touch(home / ".lmstudio/models/acme/tiny/tiny.F16.gguf")
    _touch(home / ".lmstudio/models/a/b/c/d/e/too-deep.gguf")
    _touch(home / ".lmstudio/models/acme/tiny/notes.txt")
    llama_cache = _touch(tmp_path / "llama-cache/acme_tiny_tiny.Q4_0.gguf")
    old_studio = _touch(home / ".cache/lm-studio/models/x/y/old.gguf")
    extra = _touch(tmp_path / "mine/model.GGUF")
    unreadable = home / ".lmstudio/models/locked"
    _touch(unreadable / "hidden.gguf")
    unreadable.chmod(0)
    try:
        found = find_gguf_files({"HOME": str(home), "LLAMA_CACHE": str(tmp_path / "llama-cache")},
                                [tmp_path / "mine", tmp_path / "missing"])
    finally:
        unreadable.chmod(0o755)
    expected = [snapshot / "again.gguf", snapshot / "sub/tiny.Q8_0.gguf", studio, llama_cache, old_studio, extra]
    if os.geteuid() == 0:  # root reads the locked folder anyway
        expected.append(unreadable / "hidden.gguf")
    assert found == sorted(expected)
    assert find_gguf_files({"HOME": str(tmp_path / "nobody")}) == []
