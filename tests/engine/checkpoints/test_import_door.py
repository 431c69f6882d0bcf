"""`variorum import` of damaged checkpoint folders: one `error:` line naming the real cause, exit 2, nothing written.

Each case damages a copy of a tiny checkpoint the way a bad download, a hostile folder or a wrong tool would:
JSON of the wrong shape or nested too deeply, files that are devices, FIFOs or links out of the folder,
shard names that leave it, depths that do not match the weights, merges that do not fit the vocabulary.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.checkpoints.inspect import inspect_checkpoint
from engine.cli import main

DEEP = "[" * 100_000 + "]" * 100_000


def _copy(folder: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(folder, tmp_path / folder.name))


def _set(path: Path, **fields: object) -> None:
    config = json.loads(path.read_text())
    config.update(fields)
    path.write_text(json.dumps(config))


def _replace(path: Path, target: str | Path) -> None:
    path.unlink()
    path.symlink_to(target)


def _fifo(path: Path) -> None:
    path.unlink(missing_ok=True)
    os.mkfifo(path)


def refused(checkpoint: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """The one error line of importing `checkpoint`, checked to exit 2 and write nothing."""
    out = tmp_path / "bundle"
    capsys.readouterr()  # what writing the fixture printed
    assert main(["import", str(checkpoint), "--out", str(out)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()  # transformers' loading bar included
    assert len(lines) == 1 and lines[0].startswith("variorum import: error: "), lines
    assert not out.exists()
    return lines[0]


Damage = Callable[[Path], None]
CASES: list[tuple[str, str, Damage, str]] = [
    ("gpt2", "architectures is a number", lambda d: _set(d / "config.json", architectures=5),
     r"'architectures' is 5, not a list of model class names"),
    ("llama", "architectures holds lists", lambda d: _set(d / "config.json", architectures=[["x"]]),
     r"'architectures' is \[\['x'\]\], not a list"),
    ("bart", "no architectures", lambda d: _set(d / "config.json", architectures=None),
     r"names no model class \(no 'architectures'; its model_type is 'bart'\)"),
    ("gpt2", "deep config.json", lambda d: (d / "config.json").write_text(DEEP),
     r"config.json \(model config\) is nested too deeply"),
    ("gpt2", "vocab_size a string", lambda d: _set(d / "config.json", vocab_size="300"), r"vocab_size is '300'"),
    ("gpt2", "config.json is /dev/zero", lambda d: _replace(d / "config.json", "/dev/zero"),
     r"config.json \(model config\) is a device, FIFO or socket, not a regular file"),
    ("bart", "config.json is a FIFO", lambda d: _fifo(d / "config.json"),
     r"config.json \(model config\) is a device, FIFO or socket"),
    ("llama", "weights are /dev/urandom", lambda d: _replace(d / "model.safetensors", "/dev/urandom"),
     r"model.safetensors \(the weights\) is a device, FIFO or socket"),
    ("llama", "weights are a FIFO", lambda d: _fifo(d / "model.safetensors"),
     r"model.safetensors \(the weights\) is a device, FIFO or socket"),
    ("gpt2", "deep safetensors header",
     lambda d: (d / "model.safetensors").write_bytes(struct.pack("<Q", len(DEEP)) + DEEP.encode() + b"\0"),
     r"safetensors header is nested too deeply"),
    ("gpt2", "safetensors header a list",
     lambda d: (d / "model.safetensors").write_bytes(struct.pack("<Q", 7) + b"[1,2,3]" + b"\0"),
     r"safetensors header is damaged \(not a JSON object\)"),
    ("bart", "tokenizer.json a list", lambda d: (d / "tokenizer.json").write_text("[1,2,3]"),
     r"tokenizer.json: not a tokenizer"),
    ("llama", "deep tokenizer.json", lambda d: (d / "tokenizer.json").write_text(DEEP),
     r"tokenizer.json \(tokenizer\) is nested too deeply"),
    ("llama", "tokenizer ids are strings",
     lambda d: (d / "tokenizer.json").write_text('{"model": {"type": "BPE", "vocab": {"a": "x"}, "merges": []}}'),
     r"its vocabulary is not a map of tokens to ids"),
    ("bart", "a tokenizer id past the embedding",
     lambda d: (d / "tokenizer.json").write_text('{"model": {"type": "BPE", "vocab": {"</s>": 99999}, "merges": []}}'),
     r"a token of id 99,999 but the weights have only 300 rows"),
    ("bart", "merges of integers",
     lambda d: (d / "tokenizer.json").write_text('{"model": {"type": "BPE", "vocab": {}, "merges": [[1, 2]]}}'),
     r"its merges are not pairs of pieces"),
    ("llama", "a pre-tokenizer that is a number",
     lambda d: _set(d / "tokenizer.json", pre_tokenizer=5), r"its tokenizer's pre_tokenizer is 5, not a pre-tokenizer"),
    ("gpt2", "deep vocab.json", lambda d: (d / "vocab.json").write_text(DEEP),
     r"vocab.json \(tokenizer vocabulary\) is nested too deeply"),
    ("gpt2", "vocab.json of floats", lambda d: (d / "vocab.json").write_text('{"a": 1.5, "<|endoftext|>": 2.5}'),
     r"its vocabulary is not a map of tokens to ids"),
    ("gpt2", "a merge of pieces not in the vocabulary", lambda d: (d / "merges.txt").write_text("#version: 0.2\na a\n"),
     r"its tokenizer's merges do not fit its vocabulary \(.*`aa` out of vocabulary"),
    ("gpt2", "merges.txt is a FIFO", lambda d: _fifo(d / "merges.txt"),
     r"merges.txt \(the tokenizer's merges\) is a device, FIFO or socket"),
    ("gpt2", "deep added_tokens.json", lambda d: (d / "added_tokens.json").write_text(DEEP),
     r"added_tokens.json \(added tokens\) is nested too deeply"),
    ("llama", "deep generation config", lambda d: (d / "generation_config.json").write_text(DEEP),
     r"generation_config.json \(generation config\) is nested too deeply"),
    ("bart", "generation config a list", lambda d: (d / "generation_config.json").write_text("[1]"),
     r"not a generation config"),
    ("gpt2", "n_layer 2**31", lambda d: _set(d / "config.json", n_layer=2**31),
     r"n_layer is 2147483648; Variorum reads 1 to 1,024 layers"),
    ("bart", "encoder_layers 10**12", lambda d: _set(d / "config.json", encoder_layers=10**12),
     r"encoder_layers is 1000000000000"),
    ("bart", "decoder_layers 2**31", lambda d: _set(d / "config.json", decoder_layers=2**31),
     r"decoder_layers is 2147483648"),
    ("llama", "num_hidden_layers 10**12", lambda d: _set(d / "config.json", num_hidden_layers=10**12),
     r"num_hidden_layers is 1000000000000"),
    ("gpt2", "more layers than the weights hold", lambda d: _set(d / "config.json", n_layer=3),
     r"n_layer is 3 but the weights hold 1 layers"),
    ("bart", "more encoder layers than the weights hold", lambda d: _set(d / "config.json", encoder_layers=2),
     r"encoder_layers is 2 but the weights hold 1 layers"),
]


@pytest.mark.parametrize(("family", "damage", "message"), [(f, d, m) for f, _, d, m in CASES],
                         ids=[name for _, name, _, _ in CASES])
def test_damaged_checkpoint_files_are_one_line(family: str, damage: Damage, message: str, tmp_path: Path,
                                               request: pytest.FixtureRequest,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    folder = _copy(request.getfixturevalue(f"{family}_folder"), tmp_path)
    damage(folder)
    assert re.search(message, refused(folder, tmp_path, capsys))


@pytest.mark.parametrize("shard", ["../outside.safetensors", "/etc/passwd", "", ".", 5])
def test_a_shard_index_naming_files_outside_the_folder_is_refused(shard: object, gpt2_folder: Path, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    folder = _copy(gpt2_folder, tmp_path)
    shutil.copy(folder / "model.safetensors", tmp_path / "outside.safetensors")
    (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {"a": shard}}))
    assert f"names the shard {shard!r}, which is not a file name in the checkpoint folder" in refused(
        folder, tmp_path, capsys)


@pytest.mark.parametrize("name", ["config.json", "model.safetensors", "merges.txt"])
def test_a_link_out_of_the_checkpoint_is_refused(name: str, gpt2_folder: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    folder = _copy(gpt2_folder, tmp_path)
    elsewhere = tmp_path / "elsewhere" / name
    elsewhere.parent.mkdir()
    shutil.copy(folder / name, elsewhere)
    _replace(folder / name, elsewhere)
    assert f"{name} (" in (line := refused(folder, tmp_path, capsys)) and "outside the checkpoint folder" in line


def test_the_checkpoint_itself_a_fifo_is_named_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    os.mkfifo(tmp_path / "model")
    os.mkfifo(tmp_path / "model.gguf")
    assert "not a checkpoint folder (it is a device, FIFO or socket" in refused(tmp_path / "model", tmp_path, capsys)
    assert "model.gguf is a device, FIFO or socket, not a regular file" in refused(tmp_path / "model.gguf", tmp_path,
                                                                                   capsys)


def test_nan_weights_are_refused_at_the_import(llama_folder: Path, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    from safetensors.torch import load_file, save_file

    folder = _copy(llama_folder, tmp_path)
    state = load_file(str(folder / "model.safetensors"))
    state["model.embed_tokens.weight"][3, 1] = float("nan")
    save_file(state, str(folder / "model.safetensors"), metadata={"format": "pt"})
    assert "its weights hold NaN or infinite values (in backbone.embed.weight)" in refused(folder, tmp_path, capsys)


def test_a_relative_folder_is_recorded_absolute(gpt2_folder: Path, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _copy(gpt2_folder, tmp_path)
    monkeypatch.chdir(tmp_path)
    assert inspect_checkpoint(Path(folder.name)).path == folder
    assert main(["import", folder.name, "--out", "bundle"]) == 0
    base = json.loads((tmp_path / "bundle" / "config.json").read_text())["base"]
    assert base["checkpoint"] == str(folder)


def test_a_relative_cache_folder_is_recorded_absolute(gpt2_folder: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from engine.bundles.imported import import_checkpoint
    from tests.engine.checkpoints.conftest import add_to_cache

    snapshot = add_to_cache(tmp_path / "hub", "acme/tiny", gpt2_folder)
    monkeypatch.chdir(tmp_path)
    bundle = import_checkpoint("acme/tiny", tmp_path / "bundle", {"HF_HUB_CACHE": "hub", "HOME": "/nonexistent"})
    assert json.loads((bundle / "config.json").read_text())["base"]["checkpoint"] == str(snapshot)


@pytest.mark.parametrize(("family", "key", "message"), [
    ("gpt2", "n_embd", r": n_embd 3 do not fit the weights. transformer.wte.weight of shape \[301, 8\]"),
    ("gpt2", "n_positions", r"n_positions 3 and n_embd 8 do not fit the weights' transformer.wpe.weight"),
    ("bart", "max_position_embeddings", r"max_position_embeddings 3 and d_model 8 do not fit .*embed_positions"),
    ("llama", "intermediate_size", r"intermediate_size 3 and hidden_size 32 do not fit .*gate_proj.weight"),
])
def test_table_sizes_that_do_not_fit_the_weights_are_refused_before_building(
        family: str, key: str, message: str, tmp_path: Path, request: pytest.FixtureRequest,
        capsys: pytest.CaptureFixture[str]) -> None:
    folder = _copy(request.getfixturevalue(f"{family}_folder"), tmp_path)
    _set(folder / "config.json", **{key: 3})
    assert re.search(message, refused(folder, tmp_path, capsys))


def test_pickled_weights_short_of_what_the_config_asks_are_refused(gpt2_folder: Path, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    # pickled weights name no tensors before loading: transformers would fill the second block with random values
    import torch
    from safetensors.torch import load_file

    folder = _copy(gpt2_folder, tmp_path)
    torch.save(load_file(str(folder / "model.safetensors")), folder / "pytorch_model.bin")
    (folder / "model.safetensors").unlink()
    _set(folder / "config.json", n_layer=2)
    assert re.search(r"its weights lack h\.1\..* \(12 tensor\(s\) its config.json asks for\)",
                     refused(folder, tmp_path, capsys))
    _set(folder / "config.json", n_layer=1)
    assert main(["import", str(folder), "--out", str(tmp_path / "bundle")]) == 0
