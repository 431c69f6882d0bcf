"""A decoder-only PermGen fine-tune is a bundle on its base: it stores what the run changed (LoRA's factors or the
last block, and the 21 rows of the marks), names the base, and loads to the same model the app writes with."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from engine.bundles.bundle import WEIGHTS_FILE, BundleError, load_model_bundle
from engine.config import TrainConfig
from engine.decoding.settings import DecodeConfig
from engine.families import model_family
from engine.loaded_model import GenerationRequest
from engine.permgen.bundle import load_permgen_bundle
from engine.permgen.decoder_model import MARK_IDS, DecoderPermGenModel
from engine.permgen.loaded import PermGenLoadedModel
from engine.permgen.train import PermGenTrainer, build_parser, run_configs
from engine.tokenizer import VariorumTokenizer
from tests.engine.permgen.conftest import STORIES, tiny_decoder_config

EMBED = "backbone.embed.weight"


def _train(base: Path, out: Path, trainable: str, tokenizer: VariorumTokenizer, device: str = "cpu",
           valid_fraction: float = 0.0) -> PermGenTrainer:
    train = TrainConfig(train_files=[str(STORIES)], out_dir=str(out), batch_size=2, max_steps=2, eval_every=2,
                        eval_batches=1, warmup_steps=0, lr=1e-2, device=device, init_from=str(base),
                        trainable=trainable, lora_rank=2, valid_fraction=valid_fraction, compile=False)
    trainer = PermGenTrainer(tiny_decoder_config(tokenizer.vocab_size), train, show_progress=False)
    trainer.run()
    return trainer


@pytest.mark.parametrize("trainable", ["last-1", "lora"])
def test_the_bundle_holds_what_the_run_changed_and_loads_the_same_model(
    llama_base: Path, pg_tokenizer: VariorumTokenizer, tmp_path: Path, trainable: str
) -> None:
    trainer = _train(llama_base, tmp_path / "run", trainable, pg_tokenizer)
    directory = tmp_path / "run" / "bundle"
    config = json.loads((directory / "config.json").read_text())
    assert config["kind"] == "permgen" and config["permgen"]["layout"] == "decoder-only"
    assert config["base"]["name"] == "tiny-llama" and config["model"]["backbone"] == "llama"
    stored = load_file(str(directory / WEIGHTS_FILE))
    assert stored[f"rows.index.{EMBED}"].tolist() == MARK_IDS and stored[f"rows.values.{EMBED}"].shape == (21, 32)
    assert EMBED not in stored and not any(".blocks.0." in name and "low_rank" not in name for name in stored)
    if trainable == "lora":
        ups = [tensor for name, tensor in stored.items() if name.startswith("low_rank.up.")]
        assert ups and all(bool(up.abs().sum() > 0) for up in ups)  # B starts at zero: every adapter learnt
        assert not any(name.startswith("backbone.blocks.") for name in stored)  # factors only
    else:
        assert "backbone.blocks.1.qkv.weight" in stored and not any("low_rank" in name for name in stored)
    loaded = load_permgen_bundle(directory)
    assert isinstance(loaded.model, DecoderPermGenModel)
    model = trainer.model.eval()
    batch = model.collate(trainer.train_data, [list(range(len(e.sentences), 0, -1)) for e in trainer.train_data])
    with torch.no_grad():
        ours, theirs = model.backbone(batch.input_ids), loaded.model.backbone(batch.input_ids)  # [B, L, D]
        assert torch.equal(ours, theirs)
        assert torch.equal(model.head.log_probs(ours[:, -1]), loaded.model.head.log_probs(theirs[:, -1]))


def test_a_run_on_each_device_measures_its_held_out_part_and_writes_its_bundle(
    device: torch.device, llama_base: Path, pg_tokenizer: VariorumTokenizer, tmp_path: Path
) -> None:
    """On CUDA the held-out pass runs attention kernels whose output is laid out otherwise than on the CPU, and
    the bundle is written from the GPU model on the base read on the CPU: both must work where training runs."""
    trainer = _train(llama_base, tmp_path / "run", "lora", pg_tokenizer, device=str(device), valid_fraction=0.3)
    assert trainer.valid_data
    loaded = load_permgen_bundle(tmp_path / "run" / "bundle")
    model = trainer.model.eval().cpu()
    batch = model.collate(trainer.valid_data, [list(range(len(e.sentences), 0, -1)) for e in trainer.valid_data])
    with torch.no_grad():  # [B, L, D]
        assert torch.equal(model.backbone(batch.input_ids), loaded.model.backbone(batch.input_ids))


def test_the_app_and_the_cli_write_with_it(llama_base: Path, pg_tokenizer: VariorumTokenizer, tmp_path: Path) -> None:
    _train(llama_base, tmp_path / "run", "last-1", pg_tokenizer)
    directory = tmp_path / "run" / "bundle"
    loaded = model_family("permgen").load(directory, torch.device("cpu"), "onnx")  # what `Engine.load` calls
    assert isinstance(loaded, PermGenLoadedModel) and loaded.runtime == "torch"
    assert "no ONNX export" in loaded.runtime_note
    paragraph = loaded.capabilities.paragraph
    assert paragraph is not None and paragraph.positions == "rotary" and paragraph.sentence_order
    request = GenerationRequest(task="story", title="the cake", n=2, num_sentences=3, sentence_order=[3, 1, 2],
                                decode=DecodeConfig(seed=1, max_new_tokens=5, real_words=True))
    variants = loaded.generate(request)
    assert [v.order for v in variants] == [[3, 1, 2], [3, 1, 2]]  # type: ignore[attr-defined]
    assert all(v.finish_reason == "eop" and sorted(v.sentences) == [1, 2, 3] for v in variants)  # type: ignore[attr-defined]


def test_a_language_model_start_brings_its_sizes_and_the_layout(llama_base: Path) -> None:
    args = build_parser().parse_args(["--init-from", str(llama_base), "--train-files", "x.txt", "--trainable", "lora",
                                      "--max-source-len", "32", "--max-sentence-len", "12"])  # 160 positions
    config, train = run_configs(args)
    assert config.layout == "decoder-only" and config.positions == "rotary" and not config.lowercase
    assert (config.model.backbone, config.model.n_kv_head, config.model.block_size) == ("llama", 2, 160)
    assert config.model.dropout == 0.0  # the language model's whole "model" section, as `variorum train` takes it
    assert train.trainable == "lora"


def test_a_damaged_row_update_is_named(llama_base: Path, pg_tokenizer: VariorumTokenizer, tmp_path: Path) -> None:
    _train(llama_base, tmp_path / "run", "last-1", pg_tokenizer)
    weights = tmp_path / "run" / "bundle" / WEIGHTS_FILE
    stored = load_file(str(weights))
    stored[f"rows.index.{EMBED}"] = stored[f"rows.index.{EMBED}"] + 10_000  # rows past the vocabulary
    save_file(stored, str(weights))
    with pytest.raises(BundleError, match=f"row update of {EMBED} does not fit"):
        load_model_bundle(tmp_path / "run" / "bundle")


def test_lora_adapters_take_part_in_the_llamas_products_and_merge_to_the_same_model(
        pg_tokenizer: VariorumTokenizer) -> None:
    pytest.importorskip("peft")
    from engine.training.trainable import merge_lora, select_trainable

    torch.manual_seed(0)
    model = DecoderPermGenModel(tiny_decoder_config(pg_tokenizer.vocab_size)).eval()
    ids = torch.tensor([[5, 9, 2, 7, 11]])
    with torch.no_grad():
        plain = model.backbone(ids)
    parts = select_trainable(model, TrainConfig(trainable="lora", lora_rank=2, lora_alpha=4))
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "lora_B" in name:  # B starts at zero (the base model); give the update something to do
                parameter.normal_(0, 0.5)
    adapted = model.backbone(ids)  # [1, 5, D]
    assert not torch.allclose(adapted, plain, atol=1e-3)
    adapted.sum().backward()
    grads = [p.grad for name, p in model.named_parameters() if "lora_A" in name]
    assert grads and all(g is not None and bool(g.abs().sum() > 0) for g in grads)
    merge_lora(model, parts)
    with torch.no_grad():
        assert torch.allclose(model.backbone(ids), adapted.detach(), atol=1e-5)
