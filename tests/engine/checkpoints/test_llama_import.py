"""An imported Llama computes the checkpoint's own logits under the renumbered ids, and greedy decoding through
the one decoding core writes what transformers' `generate()` writes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from transformers import LlamaForCausalLM

from engine.bundles.imported import import_checkpoint
from engine.checkpoints.inspect import CheckpointError, inspect_checkpoint
from engine.checkpoints.llama_import import import_llama
from engine.checkpoints.vocabulary import import_vocabulary
from engine.front_door import DecodeConfig, Engine, GenerationRequest
from engine.packed_linear import HalfWeight, half_products_available
from tests.engine.checkpoints.conftest import write_llama

TEXT = "The cat sat on the mat in 1964. A dog ran home."
PROMPTS = ("The cat", "She went to the park", "A dog ran")


def _logits_match(folder: Path) -> None:
    info = inspect_checkpoint(folder)
    model, tokenizer = import_llama(info)
    theirs = LlamaForCausalLM.from_pretrained(str(folder), local_files_only=True).eval()
    source_rows = torch.tensor(import_vocabulary(info).source_rows)  # [V_new] checkpoint row of each new id
    known = (source_rows >= 0).nonzero()[:, 0]
    ids = tokenizer.encode(TEXT)
    with torch.no_grad():
        ours = model.head.logits(model.hidden_states(torch.tensor([ids]))[0])  # [T, V_new]
        expected = theirs(source_rows[ids][None]).logits[0]  # [T, V_checkpoint]
    assert model.config.vocab_size == len(source_rows) == tokenizer.vocab_size
    assert (model.config.backbone, model.config.kv_heads, model.config.rope_theta) == ("llama", 2, 500.0)
    assert torch.allclose(ours[:, known], expected[:, source_rows[known]], atol=1e-4)


def test_the_imported_model_gives_the_checkpoints_logits(llama_folder: Path) -> None:
    _logits_match(llama_folder)


def test_an_untied_output_layer_is_imported_with_its_rows_moved(tmp_path: Path) -> None:
    _logits_match(write_llama(tmp_path / "untied", tied=False))


def test_the_tokenizer_cuts_text_as_the_checkpoints_own(llama_folder: Path) -> None:
    from tokenizers import Tokenizer

    theirs = Tokenizer.from_file(str(llama_folder / "tokenizer.json"))
    vocabulary = import_vocabulary(inspect_checkpoint(llama_folder))
    ours = vocabulary.tokenizer.encode(TEXT)
    assert [vocabulary.source_rows[i] for i in ours] == theirs.encode(TEXT).ids
    assert vocabulary.tokenizer.decode(ours) == TEXT
    assert len([i for i in ours if "1964"[0] in vocabulary.tokenizer.decode([i])]) >= 1  # digits cut one by one


def test_greedy_text_is_transformers_generate(llama_folder: Path, tmp_path: Path) -> None:
    bundle = import_checkpoint(str(llama_folder), tmp_path / "tiny", {"HOME": "/nonexistent"})
    loaded = Engine([bundle.parent]).load(bundle, device="cpu", runtime="torch")
    theirs = LlamaForCausalLM.from_pretrained(str(llama_folder), local_files_only=True).eval()
    vocabulary = import_vocabulary(inspect_checkpoint(llama_folder))
    rows = torch.tensor(vocabulary.source_rows)
    decode = DecodeConfig(greedy=True, max_new_tokens=12, real_words=False, no_doubled_words=False,
                          end_at_sentence=False)
    for prompt in PROMPTS:
        stream = loaded.stream(GenerationRequest(prompt=prompt, n=1, decode=decode))
        for _ in stream:
            pass
        ours = [vocabulary.source_rows[i] for i in stream.variants[0].token_ids if i != 0]  # checkpoint ids
        context = torch.tensor([[0, *rows[vocabulary.tokenizer.encode(prompt)].tolist()]])  # [eos, *prompt]
        with torch.no_grad():
            generated = theirs.generate(context, max_new_tokens=12, do_sample=False, eos_token_id=0, pad_token_id=0)
        new = generated[0, context.shape[1]:].tolist()
        new = new[: new.index(0)] if 0 in new else new
        assert ours == new, prompt


@pytest.mark.skipif(not half_products_available(), reason="this PyTorch build has no FBGEMM")
def test_loaded_to_generate_without_an_export_its_blocks_read_float16_weights(llama_folder: Path,
                                                                              tmp_path: Path) -> None:
    """Half the bytes per step (engine/packed_linear.py `HalfWeight`); an exported bundle keeps float32 so that
    both runtimes write one text for a seed (tests/engine/onnx/test_llama_export.py)."""
    bundle = import_checkpoint(str(llama_folder), tmp_path / "tiny", {"HOME": "/nonexistent"})
    loaded = Engine([bundle.parent]).load(bundle, device="cpu", runtime="auto")
    blocks = loaded.bundle.model.backbone.block_list()
    assert all(isinstance(layer.weight, HalfWeight) for block in blocks for layer in (block.qkv, block.down))


@pytest.mark.parametrize(("option", "value", "message"), [
    ("hidden_act", "gelu", "activation 'gelu'"),
    ("attention_bias", True, "biases on the attention projections"),
    ("rope_scaling", {"rope_type": "linear", "factor": 2.0}, "rope scaling 'linear'"),
])
def test_options_the_block_does_not_compute_are_refused(llama_folder: Path, tmp_path: Path, option: str,
                                                         value: object, message: str) -> None:
    folder = Path(shutil.copytree(llama_folder, tmp_path / option))
    config = json.loads((folder / "config.json").read_text())
    config[option] = value
    if option == "rope_scaling":
        config.pop("rope_parameters", None)
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match=message):
        import_llama(inspect_checkpoint(folder))


def test_a_bundle_on_a_gguf_base_finds_it_where_get_base_keeps_it_and_says_when_it_is_missing(
        llama_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.engine.checkpoints.gguf_writer import write_llama_gguf

    spec = json.loads((llama_folder / "tokenizer.json").read_text())
    theirs = LlamaForCausalLM.from_pretrained(str(llama_folder), local_files_only=True)
    (tmp_path / "elsewhere").mkdir()
    gguf = write_llama_gguf(theirs, spec, tmp_path / "elsewhere" / "tiny.gguf", pre="smollm")
    bundle = import_checkpoint(str(gguf), tmp_path / "models" / "tiny", {"HOME": "/nonexistent"})
    engine = Engine([bundle.parent])
    listed = engine.list_bundles()[0]
    assert listed.pretrained and listed.error == ""
    data = tmp_path / "data"
    monkeypatch.setattr("engine.bundles.base.user_data_dir", lambda: data)
    gguf.rename(tmp_path / "tiny.gguf")  # moved away: as on another computer
    assert "needs the pretrained base tiny" in engine.list_bundles()[0].error
    (data / "base").mkdir(parents=True)
    (tmp_path / "tiny.gguf").rename(data / "base" / "tiny.gguf")  # where `variorum get-base` keeps it
    assert engine.list_bundles()[0].error == ""
    loaded = engine.load(bundle, device="cpu", runtime="torch")
    stream = loaded.stream(GenerationRequest(prompt="The cat", n=1, decode=DecodeConfig(seed=1, max_new_tokens=4)))
    for _ in stream:
        pass
    assert stream.variants[0].finish_reason


def test_gguf_files_where_writers_keep_them_are_listed_and_a_folder_holding_one_is_imported(
        llama_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from engine.bundles.imported import importable_checkpoints
    from tests.engine.checkpoints.gguf_writer import write_llama_gguf

    studio = tmp_path / "home" / ".lmstudio" / "models" / "acme" / "tiny"
    studio.mkdir(parents=True)
    spec = json.loads((llama_folder / "tokenizer.json").read_text())
    gguf = write_llama_gguf(LlamaForCausalLM.from_pretrained(str(llama_folder), local_files_only=True), spec,
                            studio / "tiny-q8.gguf")
    (studio / "broken.gguf").write_bytes(b"GGUF" + b"\0" * 20)
    listed = importable_checkpoints({"HOME": str(tmp_path / "home")})
    assert [(info.name, info.source) for info in listed] == [("tiny-q8", str(gguf))]
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    engine = Engine([tmp_path / "models"], models_dir=tmp_path / "models")
    with pytest.raises(CheckpointError, match=r"holds 2 \.gguf files \(broken\.gguf, tiny-q8\.gguf\)"):
        engine.open_model_folder(studio)
    (studio / "broken.gguf").unlink()
    bundle = engine.open_model_folder(studio)
    assert bundle == tmp_path / "models" / "tiny-q8"  # named after the file, without its suffix
    assert engine.importable_checkpoints() == []  # imported: offered no more
