"""Typed capabilities: which method controls a loaded model honours, declared by its head."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.api import Engine
from engine.cli import main
from engine.controls import DECODE_DEFAULTS, Capabilities, ClassGroups, HeadCapabilities, PosGroups, Termination
from engine.decoding import DecodeConfig
from engine.evaluation.decoders import check_decoders
from engine.heads.posg import POSGHead
from engine.heads.termination import TerminationHead
from engine.model import LanguageModel
from engine.tokenizer import VariorumTokenizer
from tests.conftest import tiny_config
from tests.engine.heads.f2_support import build_f2_model

F2_CONTROLS = {"class_temperature", "class_top_k", "class_rarity_bias"}


def test_each_head_declares_its_controls(tokenizer: VariorumTokenizer) -> None:
    softmax = LanguageModel(tiny_config(tokenizer.vocab_size)).head.capabilities()
    assert softmax == HeadCapabilities("softmax", 1) and softmax.controls == frozenset()
    f2 = build_f2_model(tokenizer).head.capabilities()
    assert f2.name == "f2" and f2.controls == F2_CONTROLS and f2.pos is None and f2.termination is None
    assert f2.classes is not None and sum(f2.classes.sizes) == tokenizer.vocab_size
    posg = POSGHead(8, 4, ("NN", "VB", "<special>")).capabilities()
    assert posg == HeadCapabilities("posg", 3, pos=PosGroups(("NN", "VB", "<special>"), ("nouns", "verbs")))
    assert posg.controls == {"pos_top_k", "pos_bias"}


def test_a_termination_head_passes_its_inner_heads_controls_on(tokenizer: VariorumTokenizer) -> None:
    f2 = build_f2_model(tokenizer).head.capabilities()
    f2_nmst = build_f2_model(tokenizer, termination="nmst", termination_eps=0.01).head.capabilities()
    assert f2_nmst.controls == F2_CONTROLS and f2_nmst.classes == f2.classes
    assert (f2_nmst.name, f2_nmst.groups, f2_nmst.termination) == ("f2+nmst", f2.groups + 1, Termination("nmst", 0.01))
    posg_st = TerminationHead(POSGHead(8, 4, ("NN", "<special>")), "st", 1e-3, eos_id=0, n_embd=4).capabilities()
    assert posg_st.pos is not None and posg_st.termination == Termination("st", 1e-3) and posg_st.groups == 3


def test_refusal_names_the_ignored_controls_and_what_they_need() -> None:
    posg = Capabilities(POSGHead(8, 4, ("NN", "<special>")).capabilities())
    assert posg.pos_guided and posg.head.refused(["pos_bias", "class_top_k", "temperature"]) == ["class_top_k"]
    softmax = Capabilities()
    assert softmax.head.refused(DecodeConfig(pos_top_k=3, temperature=0.8).active_fields()) == ["pos_top_k"]
    with pytest.raises(ValueError, match=r"class_top_k, pos_top_k need\(s\) a POS-guided head \(POSG\) and a head "
                                         r"with frequency classes \(F²\): this 'softmax' model does not honour"):
        softmax.head.check(["temperature", "pos_top_k", "class_top_k"])
    softmax.head.check(["temperature", "flat_sampling", "greedy"])  # every model honours the sampling controls


def test_groups_are_classes_or_tags_never_both() -> None:
    with pytest.raises(ValueError, match="not both"):
        HeadCapabilities("x", 2, classes=ClassGroups("mefmax", (1, 1), (0.5, 0.5)), pos=PosGroups(("NN",), ("nouns",)))


def test_one_set_of_decode_defaults() -> None:
    assert DecodeConfig().max_new_tokens == DECODE_DEFAULTS.max_new_tokens


def test_cli_and_eval_refuse_controls_the_model_ignores(tiny_bundle: Path, capsys: pytest.CaptureFixture[str],
                                                       tiny_model: LanguageModel) -> None:
    assert Engine([]).load(tiny_bundle, device="cpu").capabilities.head.name == "softmax"
    status = main(["generate", "--bundle", str(tiny_bundle), "--device", "cpu", "--pos-top-k", "3"])
    assert status == 2 and "pos_top_k need(s) a POS-guided head" in capsys.readouterr().err
    with pytest.raises(ValueError, match=r"postopk=3.*POS-guided head"):  # eval refuses through the same check
        check_decoders(tiny_model.head.capabilities(), ["postopk=3"])

