"""The ONNX runtime reads an export through `engine.onnx.export_format`, never through the exporter."""

from __future__ import annotations

from tests.test_layers import ROOT, import_graph

RUNTIME = ("engine.onnx.runner", "engine.onnx.seq2seq_runner", "engine.onnx.session", "engine.onnx.runtime")


def test_the_runtime_never_imports_the_exporter() -> None:
    graph = import_graph(ROOT, ("engine",))
    for module in RUNTIME:
        assert not {m for m in graph[module] if m.startswith(("engine.onnx.export", "engine.onnx.quantize"))
                    and m != "engine.onnx.export_format"}, module
