"""Typed capabilities: which method controls a loaded model honours, derived from its head."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.api import Engine
from engine.cli import main
from engine.controls import DECODE_DEFAULTS, Capabilities
from engine.decoding import DecodeConfig
from engine.evaluation.decoders import check_decoders
from engine.heads.posg import POSGHead
from engine.model import LanguageModel
from engine.tokenizer import VariorumTokenizer
from tests.conftest import tiny_config
from tests.engine.heads.f2_support import build_f2_model


def test_controls_follow_the_head_even_inside_a_termination_head(tokenizer: VariorumTokenizer) -> None:
    f2 = Capabilities.from_dict(build_f2_model(tokenizer).head.capabilities())
    assert f2.controls == {"class_temperature", "class_top_k", "class_rarity_bias"} and not f2.pos_guided
    f2_nmst = Capabilities.from_dict(build_f2_model(tokenizer, termination="nmst").head.capabilities())
    assert f2_nmst.controls == f2.controls and f2_nmst.termination == "nmst" and f2_nmst.head == "f2+nmst"
    posg = Capabilities.from_dict(POSGHead(8, 4, ("NN", "VB", "<special>")).capabilities())
    assert posg.pos_guided and posg.refused(["pos_bias", "class_top_k", "temperature"]) == ["class_top_k"]
    softmax = Capabilities.from_dict(LanguageModel(tiny_config(tokenizer.vocab_size)).head.capabilities())
    assert softmax.refused(DecodeConfig(pos_top_k=3, temperature=0.8).active_fields()) == ["pos_top_k"]


def test_one_set_of_decode_defaults() -> None:
    assert DecodeConfig().max_new_tokens == DECODE_DEFAULTS.max_new_tokens


def test_cli_and_eval_refuse_controls_the_model_ignores(tiny_bundle: Path, capsys: pytest.CaptureFixture[str],
                                                       tiny_model: LanguageModel) -> None:
    assert Engine([]).load(tiny_bundle, device="cpu").controls.head == "softmax"
    status = main(["generate", "--bundle", str(tiny_bundle), "--device", "cpu", "--pos-top-k", "3"])
    assert status == 2 and "does not honour ['pos_top_k']" in capsys.readouterr().err
    with pytest.raises(ValueError, match="need a POSG model"):  # eval refuses through the same checks
        check_decoders(tiny_model.head, ["postopk=3"])
