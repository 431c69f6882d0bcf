"""PermGen on ONNX Runtime: the exported encoder and decoder step decode exactly like torch.

Tiny untrained PermGen bundles (hierarchical and absolute positions, a two-level POSG head, a
paraphrase bundle) are exported once; each test compares the ONNX runner with the torch one."""

from __future__ import annotations

import collections
import math
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from engine.bundles.bundle import WEIGHTS_FILE, save_bundle
from engine.decoding import DecodeConfig
from engine.front_door import Engine, GenerationRequest
from engine.heads.posg import POSGHead
from engine.onnx.seq2seq_runner import OnnxSeq2SeqRunner
from engine.permgen.beam_decode import BeamPermGenStream
from engine.permgen.bundle import load_permgen_bundle
from engine.permgen.control import OrderControl
from engine.permgen.data import tokenizer_texts
from engine.permgen.decode import PermGenStream, PermGenVariant
from engine.permgen.model import PermGenModel
from engine.permgen.readers import read_examples
from engine.permgen.runner import TorchSeq2SeqRunner
from engine.tokenizer import VariorumTokenizer
from tests.engine.onnx.test_shared_weights import referring
from tests.engine.permgen.conftest import STORIES, tiny_permgen_config

pytest.importorskip("onnxruntime")

TOLERANCE = 1e-4  # fp32 graphs: the bound on |Δ log-prob| and on hidden states
SOURCE = "title : the lost cake keywords : mia , oven"


@pytest.fixture(scope="module")
def permgen_tokenizer() -> VariorumTokenizer:
    return VariorumTokenizer.train(tokenizer_texts(read_examples(STORIES)), vocab_size=330)


@pytest.fixture(scope="module")
def make_permgen(tmp_path_factory: pytest.TempPathFactory,
                 permgen_tokenizer: VariorumTokenizer) -> Callable[[str], Path]:
    """kind → an exported tiny PermGen bundle of that kind (built once each)."""
    from engine.onnx.export import export_bundle

    made: dict[str, Path] = {}

    def make(kind: str) -> Path:
        if kind not in made:
            path = tmp_path_factory.mktemp("permgen-onnx") / kind
            save_bundle(path, build_model(kind, permgen_tokenizer.vocab_size), permgen_tokenizer,
                        f"# Tiny {kind} PermGen\n\nFor tests.\n")
            export_bundle(path)
            made[kind] = path
        return made[kind]

    return make


def build_model(kind: str, vocab_size: int) -> PermGenModel:
    """A tiny untrained model: hierarchical / absolute positions, a POSG head (words split between two
    tags, special tokens in the third), or a paraphrase model."""
    posg = {"head": "posg", "pos_tags": ["NN", "VB", "SPECIAL"]} if kind == "posg" else {}
    config = tiny_permgen_config(vocab_size, **posg)
    config.positions = "absolute" if kind == "absolute" else "hierarchical"
    config.task = "paraphrase" if kind == "paraphrase" else "story"
    torch.manual_seed(0)
    model = PermGenModel(config).eval()
    if isinstance(model.head, POSGHead):
        membership = torch.zeros(3, vocab_size, dtype=torch.bool)
        membership[0, 23::2] = membership[1, 24::2] = membership[2, :23] = True
        model.head.membership.copy_(membership)
    return model


def onnx_runner(path: Path) -> OnnxSeq2SeqRunner:
    model = Engine([]).load(path, "cpu", "onnx")
    assert isinstance(model.runner, OnnxSeq2SeqRunner), model.runtime_note  # type: ignore[attr-defined]
    return model.runner  # type: ignore[attr-defined, no-any-return]


@pytest.mark.parametrize("kind", ["hierarchical", "absolute"])
def test_encoder_and_decoder_step_match_torch_through_selects_and_rewinds(
    kind: str, make_permgen: Callable[[str], Path]
) -> None:
    path = make_permgen(kind)
    model = load_permgen_bundle(path).model
    torch_runner, runner = TorchSeq2SeqRunner(model.backbone), onnx_runner(path)
    generator = torch.Generator().manual_seed(0)

    def inputs(rows: int, length: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        ids = torch.randint(5, model.config.model.vocab_size, (rows, length), generator=generator)
        return ids, torch.randint(0, 4, (rows, length), generator=generator), torch.randint(
            0, 8, (rows, length), generator=generator)

    source = torch.randint(5, model.config.model.vocab_size, (1, 11), generator=generator)
    with torch.inference_mode():
        caches = torch_runner.start(source, 3), runner.start(source, 3)
        for rows, length in ((3, 4), (3, 1), (3, 1)):
            step = inputs(rows, length)
            expected, got = torch_runner.decode(*step, caches[0]), runner.decode(*step, caches[1])
            assert got.shape == expected.shape and float((got - expected).abs().max()) < TOLERANCE
        for cache in caches:
            cache.select_rows(torch.tensor([2, 0]))  # beams: any rows, any order
            cache.length = 5  # the sentence beam's rewind
        step = inputs(2, 2)
        expected, got = torch_runner.decode(*step, caches[0]), runner.decode(*step, caches[1])
        assert float((got - expected).abs().max()) < TOLERANCE
        assert caches[0].length == caches[1].length == 7


def candidates_under_both_runtimes(
    path: Path, tokenizer: VariorumTokenizer, settings: DecodeConfig, beam_width: int = 1
) -> tuple[list[PermGenVariant], list[PermGenVariant]]:
    """The candidates of one story request for SOURCE (5 sentences), decoded with torch, then with ONNX Runtime."""
    model = load_permgen_bundle(path).model
    source, control = tokenizer.encode(SOURCE), OrderControl(num_sentences=5)
    results = []
    for runner in (None, onnx_runner(path)):
        stream = (PermGenStream(model, tokenizer, source, 4, settings, control, runner=runner) if beam_width == 1
                  else BeamPermGenStream(model, tokenizer, source, 2, settings, control, beam_width, runner=runner))
        list(stream)
        results.append(stream.candidates)
    return results[0], results[1]


@pytest.mark.parametrize("kind", ["hierarchical", "absolute", "posg"])
def test_same_seed_same_tokens_and_log_probs_as_torch(
    kind: str, make_permgen: Callable[[str], Path], permgen_tokenizer: VariorumTokenizer
) -> None:
    settings = DecodeConfig(max_new_tokens=10, top_p=0.9, seed=7, pos_top_k=2 if kind == "posg" else 0)
    results = candidates_under_both_runtimes(make_permgen(kind), permgen_tokenizer, settings)
    tokens = 0
    for torch_variant, onnx_variant in zip(*results, strict=True):
        assert onnx_variant.token_ids == torch_variant.token_ids and onnx_variant.text == torch_variant.text
        assert onnx_variant.token_groups == torch_variant.token_groups
        deltas = torch.tensor(onnx_variant.token_log_probs) - torch.tensor(torch_variant.token_log_probs)
        assert float(deltas.abs().max()) < TOLERANCE
        tokens += len(torch_variant.token_ids)
    assert tokens >= 100  # five sentences of up to ten words per candidate: well over 100 steps in all


@pytest.mark.parametrize("kind", ["hierarchical", "posg"])
def test_sentence_beams_give_torch_s_candidates(
    kind: str, make_permgen: Callable[[str], Path], permgen_tokenizer: VariorumTokenizer
) -> None:
    torch_candidates, onnx_candidates = candidates_under_both_runtimes(
        make_permgen(kind), permgen_tokenizer, DecodeConfig(max_new_tokens=6, seed=3), beam_width=3)
    assert [(v.token_ids, v.text) for v in onnx_candidates] == [(v.token_ids, v.text) for v in torch_candidates]


@pytest.mark.parametrize("request_", [
    GenerationRequest(task="story", title="The lost cake", n=3, decode=DecodeConfig(max_new_tokens=8, seed=4)),
    GenerationRequest(task="story", title="The lost cake", n=2, beam_width=2, num_sentences=2,
                      decode=DecodeConfig(max_new_tokens=8, seed=4)),
    GenerationRequest(task="paraphrase", prompt="Mia baked a cake. It burned.", n=2,
                      decode=DecodeConfig(max_new_tokens=8, seed=4)),
    GenerationRequest(task="paraphrase", prompt="Mia baked a cake. It burned.", n=2, beam_width=2,
                      decode=DecodeConfig(max_new_tokens=8, seed=4)),
], ids=["story", "story-beam", "paraphrase", "paraphrase-beam"])
def test_engine_auto_runs_the_export_and_writes_torch_s_text(
    request_: GenerationRequest, make_permgen: Callable[[str], Path]
) -> None:
    path = make_permgen("paraphrase" if request_.task == "paraphrase" else "hierarchical")
    onnx_model, torch_model = Engine([]).load(path, "cpu", "auto"), Engine([]).load(path, "cpu", "torch")
    assert onnx_model.runtime == "onnx (CPUExecutionProvider)" and onnx_model.runtime_note == ""
    assert torch_model.runtime == "torch"
    assert [v.text for v in onnx_model.generate(request_)] == [v.text for v in torch_model.generate(request_)]


def test_stale_export_falls_back_to_torch_with_a_reason(make_permgen: Callable[[str], Path], tmp_path: Path) -> None:
    path = tmp_path / "bundle"
    shutil.copytree(make_permgen("hierarchical"), path)
    weights = path / WEIGHTS_FILE
    weights.write_bytes(weights.read_bytes()[:-4] + b"\0\0\0\0")  # "retrained": other weights than the export's
    model = Engine([]).load(path, "cpu", "onnx")
    assert model.runtime == "torch" and "made from other weights" in model.runtime_note


@pytest.mark.parametrize("offered", [True, False])
def test_int8_decoder_is_checked_on_held_out_stories_and_offered_within_2_percent(
    offered: bool, permgen_tokenizer: VariorumTokenizer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from engine.onnx import quantize
    from engine.onnx.export import export_bundle
    from engine.permgen.heldout import held_out_examples, target_nll

    path = tmp_path / "story"
    save_bundle(path, build_model("hierarchical", permgen_tokenizer.vocab_size), permgen_tokenizer, "# Tiny\n",
                provenance={"train": {"valid_fraction": 0.5}})  # the 4-story fixture holds 1 out
    monkeypatch.setattr(quantize, "MAX_PERPLEXITY_RISE", 10.0 if offered else -1.0)  # any rise passes / fails
    record = export_bundle(path, [STORIES]).int8
    assert record["offered"] is offered and record["documents"] == 1 and record["tokens"] > 0
    bundle = load_permgen_bundle(path)
    natural = target_nll(bundle.model, held_out_examples(bundle, [STORIES]), 8)  # the torch model's own number
    assert record["fp32_perplexity"] == pytest.approx(math.exp(natural), rel=1e-4)
    assert abs(record["int8_perplexity"] / record["fp32_perplexity"] - 1) < 0.05
    model = Engine([]).load(path, "cpu", "onnx-int8")
    assert model.runtime == ("onnx (CPUExecutionProvider) int8" if offered else "onnx (CPUExecutionProvider)")
    assert ("not offered" in model.runtime_note) is not offered
    assert model.generate(GenerationRequest(task="story", title="The lost dog", n=2,
                                            decode=DecodeConfig(max_new_tokens=30, seed=1)))


def test_held_out_nll_through_a_runner_is_the_model_s(make_permgen: Callable[[str], Path]) -> None:
    """One example at a time through the torch runner (or ONNX fp32): the batched teacher-forced number."""
    from engine.permgen.data import DataStats, encode_examples, load_examples
    from engine.permgen.heldout import target_nll

    bundle = load_permgen_bundle(make_permgen("hierarchical"))
    config = bundle.model.config
    data = encode_examples(load_examples([STORIES], DataStats(), task=config.task), bundle.tokenizer,
                           config.max_source_len, config.max_sentence_len, task=config.task)  # all 4, padded batched
    batched = target_nll(bundle.model, data, 8)
    assert target_nll(bundle.model, data, 8, runner=TorchSeq2SeqRunner(bundle.model.backbone)) == pytest.approx(
        batched, rel=1e-5)
    assert target_nll(bundle.model, data, 8, runner=onnx_runner(make_permgen("hierarchical"))) == pytest.approx(
        batched, rel=1e-4)


def test_the_card_names_both_graphs(make_permgen: Callable[[str], Path]) -> None:
    card = (make_permgen("hierarchical") / "card.md").read_text()
    assert "- encoder (`encoder.onnx`): in source_ids [1, source]; out cross_keys_l / cross_values_l" in card
    assert "- decoder (`decoder.onnx`): in input_ids [batch, new]; sentence [batch, new]; local [batch, new]" in card


def test_decoder_step_fuses_self_attention_and_residual_norms(make_permgen: Callable[[str], Path]) -> None:
    """Per layer: one fused self-attention over the cache and three fused post-norm residuals; the
    cross-attention (keys / values of batch 1 broadcast to the rows) stays plain ops."""
    onnx = pytest.importorskip("onnx")
    graph = onnx.load(str(make_permgen("hierarchical") / "onnx" / "decoder.onnx"), load_external_data=False).graph
    kinds = collections.Counter(node.op_type for node in graph.node)
    layers = sum(1 for tensor in graph.input if tensor.name.startswith("past_keys"))
    assert kinds["MultiHeadAttention"] == layers
    assert kinds["SkipLayerNormalization"] == 3 * layers
    assert kinds["Softmax"] == layers  # the cross-attention's: self-attention has none of its own


def test_permgen_graphs_refer_to_transposed_weights_through_a_transpose(
    make_permgen: Callable[[str], Path],
) -> None:
    onnx = pytest.importorskip("onnx")
    path = make_permgen("hierarchical")
    for name in ("encoder", "decoder"):
        graph = path / "onnx" / f"{name}.onnx"
        stored = [n for n in referring(graph) if n.endswith(".stored")]
        nodes = onnx.load(str(graph), load_external_data=False).graph.node
        transposes = {n.input[0] for n in nodes if n.op_type == "Transpose"}
        assert stored and set(stored) <= transposes  # every Linear weight read transposed from the bundle
