"""GGUF files damaged where the header parser must not trust them: tensor offsets, token lists, block types."""

from __future__ import annotations

import json
import struct
import warnings
from pathlib import Path

import pytest
from transformers import LlamaForCausalLM

from engine.bundles.imported import import_checkpoint
from engine.checkpoints.gguf_file import read_gguf_summary
from engine.checkpoints.inspect import CheckpointError
from tests.engine.checkpoints.gguf_writer import write_llama_gguf


@pytest.fixture(scope="module")
def tiny_gguf(llama_folder: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    model = LlamaForCausalLM.from_pretrained(str(llama_folder))
    tokenizer = json.loads((llama_folder / "tokenizer.json").read_text())
    return write_llama_gguf(model, tokenizer, tmp_path_factory.mktemp("gguf") / "tiny.gguf")


def _patched(source: Path, target: Path, tensor: str, field: str, value: int) -> Path:
    """`source` with one field of `tensor`'s entry in the tensor table replaced: "type" or "offset"."""
    data = bytearray(source.read_bytes())
    name = tensor.encode()
    at = data.index(struct.pack("<Q", len(name)) + name) + 8 + len(name)
    dims = struct.unpack_from("<I", data, at)[0]
    type_at = at + 4 + 8 * dims
    if field == "type":
        struct.pack_into("<I", data, type_at, value)
    else:
        struct.pack_into("<Q", data, type_at + 4, value)
    target.write_bytes(bytes(data))
    return target


def _refusal(path: Path) -> str:
    with pytest.raises(CheckpointError) as caught:
        read_gguf_summary(path)
    return str(caught.value)


def test_a_tensor_offset_off_the_alignment_is_refused(tiny_gguf: Path, tmp_path: Path) -> None:
    path = _patched(tiny_gguf, tmp_path / "m.gguf", "token_embd.weight", "offset", 1)
    assert "token_embd.weight's data offset 1 is not a multiple of the file's alignment 32" in _refusal(path)


def test_tensors_whose_data_overlap_are_refused(tiny_gguf: Path, tmp_path: Path) -> None:
    path = _patched(tiny_gguf, tmp_path / "m.gguf", "output_norm.weight", "offset", 0)  # where token_embd is
    assert "overlap" in _refusal(path) and "output_norm.weight" in _refusal(path)


def test_a_token_list_of_numbers_is_refused(llama_folder: Path, tmp_path: Path) -> None:
    model = LlamaForCausalLM.from_pretrained(str(llama_folder))
    tokenizer = json.loads((llama_folder / "tokenizer.json").read_text())
    path = write_llama_gguf(model, tokenizer, tmp_path / "m.gguf", metadata={"tokenizer.ggml.tokens": [1, 2]})
    assert "tokenizer.ggml.tokens holds values that are not strings" in _refusal(path)


def test_blocks_that_dequantize_to_nan_are_refused_without_numpy_warnings(tiny_gguf: Path, tmp_path: Path) -> None:
    # float32 bytes read as Q4_1 blocks: scales of any value, overflowing to inf and NaN
    path = _patched(tiny_gguf, tmp_path / "m.gguf", "token_embd.weight", "type", 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's overflow warning would be a second line on stderr
        with pytest.raises(CheckpointError, match=r"its weights hold NaN or infinite values \(in backbone.embed"):
            import_checkpoint(str(path), tmp_path / "bundle", {"HOME": "/nonexistent"})
    assert not (tmp_path / "bundle").exists()
