"""Our methods on top of an imported GPT-2: a new head (F², NMST) over its backbone, trained head only, the
last blocks, LoRA or all of it; the bundle stores only what changed and names its base checkpoint."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from engine.bundles.bundle import BundleError, load_bundle
from engine.bundles.imported import import_checkpoint
from engine.front_door import DecodeConfig, Engine, GenerationRequest
from engine.lm.train import main as train_main
from tests.conftest import STORIES
from tests.engine.checkpoints.conftest import write_gpt2

NO_CACHE = {"HOME": "/nonexistent"}


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A two-block GPT-2 checkpoint, imported."""
    root = tmp_path_factory.mktemp("finetune")
    return import_checkpoint(str(write_gpt2(root / "gpt2", layers=2)), root / "imported", NO_CACHE)


def fine_tune(start: Path, out: Path, *flags: str) -> Path:
    code = train_main(["--init-from", str(start), "--train-files", str(STORIES), "--out-dir", str(out),
                       "--max-steps", "3", "--batch-size", "2", "--seq-len", "16", "--warmup-steps", "1",
                       "--lr", "1e-2", "--no-compile", "--no-progress", *flags])
    assert code == 0
    return out / "bundle"


def stored(bundle: Path) -> set[str]:
    return set(load_file(str(bundle / "model.safetensors")))


def write(bundle: Path, runtime: str = "torch") -> list[str]:
    model = Engine([bundle.parent]).load(bundle, device="cpu", runtime=runtime)
    stream = model.stream(GenerationRequest(prompt="The cat", n=2,
                                            decode=DecodeConfig(seed=4, max_new_tokens=8, real_words=False)))
    for _ in stream:
        pass
    assert all(v.finish_reason for v in stream.variants)
    return [v.text for v in stream.variants]


def test_an_import_stores_no_weights_and_loads_the_checkpoints_model(imported: Path) -> None:
    assert stored(imported) == set()
    config = json.loads((imported / "config.json").read_text())
    assert config["base"]["architecture"] == "GPT2LMHeadModel" and config["base"]["weights_sha256"]
    assert load_bundle(imported).model.num_parameters() > 0 and write(imported)


def test_head_only_trains_a_new_f2_nmst_head_and_stores_only_it(imported: Path, tmp_path: Path) -> None:
    bundle = fine_tune(imported, tmp_path / "head", "--head", "f2", "--termination", "nmst", "--trainable", "head")
    loaded, start = load_bundle(bundle), load_bundle(imported)
    assert loaded.model.config.head == "f2" and loaded.model.config.termination == "nmst"
    assert loaded.model.config.n_layer == 2  # the sizes came from the start bundle, no flags needed
    assert loaded.tokenizer.counts.sum() > 0  # counted on the training text: F² classes need them
    assert stored(bundle) and all(name.startswith("head.") for name in stored(bundle))
    backbone = {k: v for k, v in loaded.model.state_dict().items() if k.startswith("backbone.")}
    assert all(torch.equal(v, start.model.state_dict()[k]) for k, v in backbone.items())
    record = json.loads((bundle / "config.json").read_text())["provenance"]["trainable"]
    assert record["setting"] == "head" and 0 < record["parameters"] < record["of"]
    assert write(bundle)


def test_the_last_block_changes_and_the_first_stays(imported: Path, tmp_path: Path) -> None:
    bundle = fine_tune(imported, tmp_path / "last", "--trainable", "last-1", "--termination", "nmst")
    names = stored(bundle)
    assert any(".h.1." in n for n in names) and not any(".h.0." in n for n in names)
    assert any(n.endswith("ln_f.weight") for n in names) and not any("wte" in n for n in names)


def test_lora_stores_low_rank_factors_that_rebuild_the_trained_weights(imported: Path, tmp_path: Path) -> None:
    pytest.importorskip("peft")
    bundle = fine_tune(imported, tmp_path / "lora", "--trainable", "lora", "--lora-rank", "2",
                       "--termination", "nmst")
    names = stored(bundle)
    ups = [n for n in names if n.startswith("low_rank.up.")]
    assert ups and all(n.replace(".up.", ".down.", 1) in names for n in ups)
    weights = load_file(str(bundle / "model.safetensors"))
    assert all(t.shape[1] == 2 for n, t in weights.items() if n.startswith("low_rank.up."))  # rank 2
    assert not any(".h." in n and not n.startswith("low_rank.") for n in names)  # blocks only as factors
    start, loaded = load_bundle(imported).model.state_dict(), load_bundle(bundle).model.state_dict()
    changed = [k for k in ups if not torch.equal(loaded[k.removeprefix("low_rank.up.")],
                                                 start[k.removeprefix("low_rank.up.")])]
    assert changed  # the adapters trained, and loading applied them
    assert "lora" not in " ".join(loaded)  # a plain model: no adapter modules left
    if importlib.util.find_spec("onnxruntime") is not None:  # the merged model exports and writes the same there
        from engine.onnx.export import export_bundle

        export_bundle(bundle)
        assert write(bundle, "onnx") == write(bundle, "torch")


def test_all_weights_need_the_base_no_more(imported: Path, tmp_path: Path) -> None:
    bundle = fine_tune(imported, tmp_path / "all", "--termination", "nmst")
    assert len(stored(bundle)) >= len(load_bundle(bundle).model.state_dict()) - 1  # the tied head is stored once
    assert write(bundle)


def test_a_head_only_run_needs_a_head_of_its_own_and_a_start(imported: Path, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert train_main(["--init-from", str(imported), "--train-files", str(STORIES), "--out-dir", str(tmp_path / "a"),
                       "--trainable", "head", "--no-progress"]) == 2
    assert "this model's head has no weights of its own" in capsys.readouterr().err
    assert train_main(["--train-files", str(STORIES), "--out-dir", str(tmp_path / "b"), "--trainable", "last-1",
                       "--no-progress"]) == 2
    assert "fine-tunes a pretrained start: give --init-from BUNDLE" in capsys.readouterr().err


def test_a_bundle_whose_base_changed_or_went_is_refused_by_name(tmp_path: Path) -> None:
    checkpoint = write_gpt2(tmp_path / "gpt2")
    bundle = import_checkpoint(str(checkpoint), tmp_path / "imported", NO_CACHE)
    weights = checkpoint / "model.safetensors"
    original = weights.read_bytes()
    weights.write_bytes(original[:-4] + bytes(4))  # same size, other values
    with pytest.raises(BundleError, match=r"model.safetensors of its base checkpoint .* has changed since the bundle "
                                          r"was made .*; import .* again, or put its files back"):
        load_bundle(bundle)
    weights.write_bytes(original)
    assert load_bundle(bundle).model is not None
    weights.rename(tmp_path / "elsewhere")
    with pytest.raises(BundleError, match=r"is built on the checkpoint gpt2 at .*, which cannot be read now"):
        load_bundle(bundle)


def test_merging_lora_keeps_what_the_adapters_compute(imported: Path) -> None:
    pytest.importorskip("peft")
    from engine.config import TrainConfig
    from engine.training.trainable import merge_lora, select_trainable

    model = load_bundle(imported).model
    parts = select_trainable(model, TrainConfig(trainable="lora", lora_rank=3, lora_alpha=6))
    torch.manual_seed(0)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "lora_B" in name:  # B starts at zero (the pretrained model); give the update something to do
                parameter.normal_(0, 0.5)
    ids = torch.tensor([[5, 9, 2, 7, 11]])
    adapted = model.next_log_probs(ids)
    updates = merge_lora(model, parts)
    assert torch.allclose(model.next_log_probs(ids), adapted, atol=1e-5)
    assert all(up.shape[1] == 3 == down.shape[0] for up, down in updates.values())
    assert not any("lora" in name for name in model.state_dict())


def test_variorum_eval_measures_an_import_with_groups_from_the_evaluated_text(imported: Path, tmp_path: Path) -> None:
    from engine.cli import main as cli_main
    from tests.engine.evaluation.conftest import TINY_SPLIT

    out = tmp_path / "report"
    assert cli_main(["eval", "--bundles", str(imported), "--split-file", str(TINY_SPLIT), "--out", str(out),
                     "--prefix-len", "6", "--continuation-len", "8", "--max-windows", "4", "--decoders", "greedy",
                     "--nmst-decoders", "greedy", "--nmst-max-length", "10", "--nmst-windows", "2",
                     "--nmst-lengths", "5", "10", "--seed", "3"]) == 0
    report = json.loads((out / "report.json").read_text())
    entry = report["bundles"][0]
    assert entry["groups_from"] == "evaluated text" and entry["result"]["agg"]["ppl_total"] > 1
    assert "frequency groups from the evaluated text's counts" in (out / "report.md").read_text()


def test_a_posg_head_learns_pos_groups_over_the_imported_vocabulary(imported: Path, tmp_path: Path) -> None:
    pytest.importorskip("spacy")
    bundle = fine_tune(imported, tmp_path / "posg", "--head", "posg", "--trainable", "head",
                       "--pos-cache-dir", str(tmp_path / "tags"))
    model = load_bundle(bundle).model
    assert model.config.head == "posg" and {"JJ", "NN", "VBD"} <= set(model.config.pos_tags)  # tagged text
    assert all(name.startswith("head.") for name in stored(bundle))
    assert write(bundle)


def test_init_from_hf_imports_the_checkpoint_as_the_runs_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    from tests.engine.checkpoints.conftest import add_to_cache

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    add_to_cache(tmp_path / "hub", "acme/tiny-gpt2", write_gpt2(tmp_path / "gpt2"))
    flags = ["--train-files", str(STORIES), "--max-steps", "2", "--batch-size", "2", "--seq-len", "8",
             "--warmup-steps", "1", "--no-compile", "--no-progress", "--termination", "nmst"]
    assert train_main(["--init-from-hf", "acme/tiny-gpt2", "--out-dir", str(tmp_path / "run"), *flags]) == 0
    start = json.loads((tmp_path / "run" / "start" / "config.json").read_text())
    assert start["base"]["name"] == "acme/tiny-gpt2"
    assert load_bundle(tmp_path / "run" / "bundle").model.config.termination == "nmst"
    other = write_gpt2(tmp_path / "other-gpt2")
    assert train_main(["--init-from-hf", str(other), "--out-dir", str(tmp_path / "run"), *flags]) == 2
    assert "start holds another checkpoint's import (acme/tiny-gpt2); use a new --out-dir" in capsys.readouterr().err
    assert train_main(["--init-from-hf", "no-such-model", "--out-dir", str(tmp_path / "other"), *flags]) == 2
    assert "no-such-model: no such folder, and not in the local" in capsys.readouterr().err


def test_init_from_a_checkpoint_or_nothing_is_one_line_saying_what_to_do(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    checkpoint = write_gpt2(tmp_path / "gpt2")
    for start, message in ((checkpoint, "is a pretrained checkpoint, not a Variorum bundle: start from it with "
                                        f"--init-from-hf {checkpoint}"),
                           (tmp_path / "none", "cannot read config.json")):
        assert train_main(["--init-from", str(start), "--train-files", str(STORIES), "--out-dir",
                           str(tmp_path / "run"), "--no-progress"]) == 2
        assert message in capsys.readouterr().err


def test_agg_trains_the_imported_embedding_by_the_counts_of_the_training_text(imported: Path, tmp_path: Path) -> None:
    bundle = fine_tune(imported, tmp_path / "agg", "--objective", "agg", "--termination", "nmst")
    loaded = load_bundle(bundle)
    assert loaded.tokenizer.counts.sum() > 0 and loaded.model.config.termination == "nmst"
    assert json.loads((bundle / "config.json").read_text())["provenance"]["train"]["objective"] == "agg"
    assert write(bundle)
