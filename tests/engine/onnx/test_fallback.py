"""A missing, stale or damaged export, or no onnxruntime: one clear line and decoding with torch."""

from __future__ import annotations

import builtins
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from engine.bundles.bundle import WEIGHTS_FILE, save_bundle
from engine.cli import main
from engine.decoding import DecodeConfig
from engine.decoding.runtime_choice import ON_RUNNER, ON_TORCH, RUNNERS
from engine.front_door import Engine, GenerationRequest
from engine.model import LanguageModel
from engine.tokenizer import VariorumTokenizer
from tests.conftest import tiny_config

pytest.importorskip("onnxruntime")

REQUEST = GenerationRequest(prompt="Once", n=2, decode=DecodeConfig(max_new_tokens=12, seed=3))


@pytest.fixture
def exported_copy(make_exported: Callable[[str], Path], tmp_path: Path) -> Path:
    """A private copy of the exported softmax bundle, free to damage."""
    path = tmp_path / "bundle"
    shutil.copytree(make_exported("softmax"), path)
    return path


def texts(path: Path, runtime: str) -> tuple[list[str], str, str]:
    model = Engine([]).load(path, "cpu", runtime)
    return [v.text for v in model.generate(REQUEST)], model.runtime, model.runtime_note


def test_auto_runs_onnx_when_exported_and_faster_and_gives_torch_s_text(
    exported_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(RUNNERS, "faster", lambda model, rows, onnx: ON_RUNNER)
    onnx_texts, runtime, note = texts(exported_copy, "auto")
    assert runtime == "onnx (CPUExecutionProvider)" and note == ""
    assert onnx_texts == texts(exported_copy, "torch")[0]


def test_auto_decodes_with_torch_where_torch_measures_faster(
    exported_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    measured: list[int] = []
    monkeypatch.setattr(RUNNERS, "faster", lambda model, rows, onnx: measured.append(rows) or ON_TORCH)
    got, runtime, note = texts(exported_copy, "auto")
    assert measured == [2] and runtime.startswith("torch (measured faster") and note == ""
    assert got == texts(exported_copy, "torch")[0]
    assert texts(exported_copy, "onnx")[1] == "onnx (CPUExecutionProvider)"  # named: used without measuring


def test_no_export_auto_is_torch_silently_onnx_says_how_to_export(tiny_bundle: Path) -> None:
    assert texts(tiny_bundle, "auto")[1:] == ("torch", "")
    _, runtime, note = texts(tiny_bundle, "onnx")
    assert runtime == "torch" and "no ONNX export" in note and "variorum export-onnx" in note


@pytest.mark.parametrize(("damage", "message"), [
    (lambda p: (p / "onnx" / "decoder.onnx").write_bytes(b"not a graph"), "damaged or was replaced"),
    (lambda p: (p / "onnx" / "decoder.onnx").unlink(), "decoder.onnx is missing"),
    (lambda p: (p / "onnx" / "export.json").write_text("{"), "export.json is not valid JSON"),
    (lambda p: (p / WEIGHTS_FILE).write_bytes((p / WEIGHTS_FILE).read_bytes()[:-4] + b"\0\0\0\0"), "other weights"),
], ids=["corrupt-graph", "missing-graph", "corrupt-record", "retrained-weights"])
def test_a_damaged_or_mismatched_export_falls_back_to_torch(
    exported_copy: Path, damage: Callable[[Path], Any], message: str
) -> None:
    expected = texts(exported_copy, "torch")[0]
    damage(exported_copy)
    if message == "other weights":  # a changed weights file: the export is stale, torch reads the new weights
        expected = texts(exported_copy, "torch")[0]
    got, runtime, note = texts(exported_copy, "auto")
    assert runtime == "torch" and message in note and note.startswith("ONNX Runtime not used, decoding with torch")
    assert got == expected


def test_a_graph_onnx_runtime_cannot_load_is_reported(exported_copy: Path) -> None:
    """A graph whose checksum was re-recorded but which ONNX Runtime refuses (a foreign or broken file)."""
    import json

    from engine.onnx.export_format import file_sha256

    graph = exported_copy / "onnx" / "decoder.onnx"
    graph.write_bytes(graph.read_bytes()[: graph.stat().st_size // 2])
    record = json.loads((exported_copy / "onnx" / "export.json").read_text())
    record["graphs"]["decoder"]["sha256"] = file_sha256(graph)
    (exported_copy / "onnx" / "export.json").write_text(json.dumps(record))
    _, runtime, note = texts(exported_copy, "onnx")
    assert runtime == "torch" and "ONNX Runtime cannot load" in note


def test_a_graph_of_another_model_fails_its_first_step_and_falls_back(
    exported_copy: Path, tmp_path: Path, tokenizer: VariorumTokenizer
) -> None:
    """A valid graph of other shapes (4 heads where the record says 2), its checksum re-recorded: it
    loads, so only running it shows the mismatch — at load time, not in the middle of a request."""
    import json

    import torch

    from engine.onnx.export import export_bundle
    from engine.onnx.export_format import file_sha256

    torch.manual_seed(0)
    other = tmp_path / "other"
    save_bundle(other, LanguageModel(tiny_config(tokenizer.vocab_size, n_head=4)).eval(), tokenizer, "# Other\n")
    export_bundle(other)
    graph = exported_copy / "onnx" / "decoder.onnx"
    shutil.copyfile(other / "onnx" / "decoder.onnx", graph)
    record = json.loads((exported_copy / "onnx" / "export.json").read_text())
    record["graphs"]["decoder"]["sha256"] = file_sha256(graph)
    (exported_copy / "onnx" / "export.json").write_text(json.dumps(record))
    got, runtime, note = texts(exported_copy, "onnx")
    assert runtime == "torch" and "failed its first step on onnx (CPUExecutionProvider)" in note
    assert got == texts(exported_copy, "torch")[0]


def test_gpu_model_needs_the_cuda_provider_else_decodes_with_torch(exported_copy: Path) -> None:
    import torch

    from engine.lm.loaded import choose_lm_runtime
    from engine.onnx.session import OnnxUnavailable, providers_for

    cuda, cpu = torch.device("cuda"), torch.device("cpu")
    both = ["CUDAExecutionProvider", "CPUExecutionProvider"]
    assert providers_for(cpu, both) == ["CPUExecutionProvider"]
    assert providers_for(torch.device("cuda", 1), both) == [
        ("CUDAExecutionProvider", {"device_id": "1", "use_tf32": "0"}), "CPUExecutionProvider"]
    with pytest.raises(OnnxUnavailable, match="onnx-gpu"):
        providers_for(cuda, ["CPUExecutionProvider"])
    import onnxruntime

    if "CUDAExecutionProvider" not in onnxruntime.get_available_providers():  # the CPU package: torch, and why
        choice = choose_lm_runtime(exported_copy, 32, 32, "auto", cuda)
        assert choice.runner is None and "no CUDA execution provider" in choice.note


def test_without_onnxruntime_onnx_names_the_extra(exported_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def refuse(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "onnxruntime":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", refuse)
    _, runtime, note = texts(exported_copy, "onnx")
    assert runtime == "torch" and "pip install 'variorum[onnx]'" in note


def _besides_words_note(err: str) -> list[str]:
    """stderr lines other than the note that a bundle has no words.txt."""
    return [line for line in err.strip().splitlines() if not (line.startswith("note:") and "words.txt" in line)]


def test_cli_export_then_generate_with_each_runtime(
    tiny_bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "b"
    shutil.copytree(tiny_bundle, path)
    assert main(["export-onnx", "--bundle", str(path)]) == 0
    assert "decoder.onnx (opset 17)" in capsys.readouterr().out
    card = (path / "card.md").read_text()
    assert "## ONNX export" in card and "input_ids [batch, new]" in card and "opset 17" in card
    outputs = []
    for runtime in ("torch", "onnx"):
        assert main(["generate", "--bundle", str(path), "--prompt", "Once", "-n", "2", "--seed", "4",
                     "--max-new-tokens", "10", "--device", "cpu", "--runtime", runtime, "--drafts", "1"]) == 0
        captured = capsys.readouterr()
        assert not _besides_words_note(captured.err)  # the tiny bundle has no words.txt, which the CLI notes
        outputs.append(captured.out)
    assert outputs[0] == outputs[1]
    (path / "onnx" / "decoder.onnx").write_bytes(b"junk")
    assert main(["generate", "--bundle", str(path), "--prompt", "Once", "-n", "1", "--seed", "4",
                 "--max-new-tokens", "5", "--device", "cpu", "--runtime", "onnx", "--drafts", "1"]) == 0
    warning = _besides_words_note(capsys.readouterr().err)
    assert len(warning) == 1 and warning[0].startswith("warning: ONNX Runtime not used, decoding with torch")


def test_export_of_a_broken_permgen_bundle_says_what_is_wrong(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "pg"
    path.mkdir()
    (path / "config.json").write_text('{"format_version": 2, "kind": "permgen", "model": {}, "permgen": {}}')
    for name in ("model.safetensors", "tokenizer.json", "card.md"):  # the files every bundle has
        (path / name).write_text("")
    assert main(["export-onnx", "--bundle", str(path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "Traceback" not in err
    assert not (path / "onnx" / "export.json").exists()


def _edit_record(bundle: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    import json

    path = bundle / "onnx" / "export.json"
    record = json.loads(path.read_text())
    edit(record)
    path.write_text(json.dumps(record))


def _graph_outside(bundle: Path, name: str) -> None:
    """The record names a copy of the real graph outside the onnx folder (its checksum still matches)."""
    outside = bundle / "onnx" / name
    shutil.copyfile(bundle / "onnx" / "decoder.onnx", outside)
    _edit_record(bundle, lambda record: record["graphs"]["decoder"].__setitem__("file", name))


@pytest.mark.parametrize(("damage", "runtime", "message"), [
    (lambda p: (p / "onnx" / "export.json").write_text("[" * 100_000 + "]" * 100_000), "auto", "nested too deeply"),
    (lambda p: _edit_record(p, lambda r: r["graphs"].__setitem__("decoder", [])), "auto", "does not name its graphs"),
    (lambda p: _edit_record(p, lambda r: r.__setitem__("layers", "2")), "auto", "layers, heads and head_dim"),
    (lambda p: _edit_record(p, lambda r: r.__setitem__("int8", {"file": "decoder.onnx", "sha256": "",
                                                                "offered": False})), "onnx-int8", "malformed int8"),
    (lambda p: _graph_outside(p, "../decoder-copy.onnx"), "auto", "outside the bundle's onnx folder"),
    (lambda p: _graph_outside(p, str(p / "decoder-copy.onnx")), "auto", "outside the bundle's onnx folder"),
], ids=["deep-record", "graph-entry-list", "layers-string", "int8-incomplete", "dot-dot-path", "absolute-path"])
def test_a_malformed_record_falls_back_to_torch_with_a_notice(
    exported_copy: Path, damage: Callable[[Path], Any], runtime: str, message: str
) -> None:
    damage(exported_copy)
    model = Engine([]).load(exported_copy, "cpu", runtime)
    assert model.runtime == "torch" and message in model.runtime_note
