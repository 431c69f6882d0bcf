"""Typed capabilities: which method controls a loaded model honours, declared by its head."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import pytest

from app.controls import spec
from engine.cli import main
from engine.cli.generate_flags import decode_from_flags, fit_to_model
from engine.cli.main import build_parser
from engine.controls import (
    DEFAULT_VARIANTS,
    Capabilities,
    ClassGroups,
    HeadCapabilities,
    ParagraphControls,
    PosGroups,
    Termination,
    read_decode_starts,
    start_bounds,
)
from engine.decode_fields import FIELDS, POS_TOP_K, TOP_K, TOP_P
from engine.decoding import DecodeConfig
from engine.evaluation.decoders import check_decoders
from engine.front_door import Engine
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
        HeadCapabilities("x", 2, classes=ClassGroups((1, 1)), pos=PosGroups(("NN",), ("nouns",)))


def test_decode_config_starts_at_every_declared_off_value() -> None:
    plain = DecodeConfig()
    assert all(getattr(plain, f.name) == f.off for f in FIELDS if not f.request)


def test_cli_and_eval_refuse_controls_the_model_ignores(tiny_bundle: Path, capsys: pytest.CaptureFixture[str],
                                                       tiny_model: LanguageModel) -> None:
    assert Engine([]).load(tiny_bundle, device="cpu").capabilities.head.name == "softmax"
    status = main(["generate", "--bundle", str(tiny_bundle), "--device", "cpu", "--pos-top-k", "3"])
    assert status == 2 and "pos_top_k need(s) a POS-guided head" in capsys.readouterr().err
    with pytest.raises(ValueError, match=r"postopk=3.*POS-guided head"):  # eval refuses through the same check
        check_decoders(tiny_model.head.capabilities(), ["postopk=3"])



def _flags(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["generate", *argv])


POSG_LM = Capabilities(HeadCapabilities("posg", 3, pos=PosGroups(("NN", "JJ", "<special>"), ("adjectives", "nouns"))))
STORY = Capabilities(HeadCapabilities(), ("story",), ParagraphControls(10, True, True, "hierarchical"))
PARAPHRASE = Capabilities(HeadCapabilities(), ("paraphrase",), ParagraphControls(10, False, True, "hierarchical"))


def test_cli_starts_where_the_app_starts() -> None:
    args = _flags()
    decode = decode_from_flags(args)
    starts = {f.name: f.writer_start for f in FIELDS if not f.request and not f.method}
    assert decode == DecodeConfig(**starts)  # top-p 0.9, real words only, ending at a sentence
    app = spec.default_values()
    shown = {s.field for s in spec.SLIDERS} | {f.name for f in spec.CHECKBOXES}  # the seed box shows a seed to fix
    assert {name: app[name] for name in shown & set(starts)} == {name: starts[name] for name in shown & set(starts)}
    assert not decode_from_flags(_flags("--any-words")).real_words
    assert not decode_from_flags(_flags("--mid-sentence")).end_at_sentence
    assert args.num_variants == DEFAULT_VARIANTS == app["n"]
    assert fit_to_model(args, decode, Capabilities()) == decode  # a plain LM: nothing else is switched on
    # a POS-guided model starts with the writer's k_POS, as the app's slider does, unless told otherwise
    assert fit_to_model(args, decode, POSG_LM).pos_top_k == POS_TOP_K.writer_start == app["pos_top_k"] == 20
    assert fit_to_model(_flags("--pos-top-k", "0"), decode, POSG_LM).pos_top_k == 0
    flat = _flags("--flat-sampling")
    assert fit_to_model(flat, decode_from_flags(flat), POSG_LM).pos_top_k == 0  # k_POS acts on the stage flat skips
    for name in ("temperature", "top_k", "repetition_penalty", "class_temperature", "class_top_k", "class_rarity_bias"):
        assert app[name] == getattr(decode, name)  # the app's other sliders start off


F2_LM = Capabilities(HeadCapabilities("f2+nmst", 4, classes=ClassGroups((2, 3, 4)),
                                      termination=Termination("nmst", 0.1)))


def test_top_k_starts_at_20_on_an_f2_model_in_the_cli_and_the_app() -> None:
    """F² draws the token inside one frequency class; every other head, or flat sampling, starts top-k off."""
    args = _flags()
    decode = decode_from_flags(args)
    assert decode.top_k == 0 and args.top_k is None  # left to the model
    assert fit_to_model(args, decode, F2_LM).top_k == TOP_K.start_on("f2") == spec.default_values(F2_LM)["top_k"] == 20
    assert fit_to_model(args, decode, F2_LM).top_p == 0.9  # the nucleus then acts on the 20
    for other in (Capabilities(), POSG_LM, STORY):
        assert fit_to_model(args, decode, other).top_k == 0 == spec.default_values(other)["top_k"]
    assert fit_to_model(_flags("--top-k", "0"), decode_from_flags(_flags("--top-k", "0")), F2_LM).top_k == 0
    assert fit_to_model(_flags("--top-k", "7"), decode_from_flags(_flags("--top-k", "7")), POSG_LM).top_k == 7
    flat = _flags("--flat-sampling")
    assert fit_to_model(flat, decode_from_flags(flat), F2_LM).top_k == 0  # one stage over the whole vocabulary


def test_generate_help_says_where_top_k_starts(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["generate", "--help"])
    text = " ".join(capsys.readouterr().out.split()).replace("--flat- sampling", "--flat-sampling")  # argparse wraps
    assert "(0 = off); 20 for a head with frequency classes (F²) unless --flat-sampling" in text


def test_a_head_names_its_groups_method(tokenizer: VariorumTokenizer) -> None:
    assert build_f2_model(tokenizer, termination="nmst", termination_eps=0.01).head.capabilities().method == "f2"
    assert POSGHead(8, 4, ("NN", "<special>")).capabilities().method == "posg"
    assert LanguageModel(tiny_config(tokenizer.vocab_size)).head.capabilities().method == ""


def test_cli_refuses_request_flags_the_model_does_not_read() -> None:
    with pytest.raises(ValueError, match="does not use --beam, --title; leave them out"):
        fit_to_model(_flags("--beam", "4", "--title", "x"), DecodeConfig(), Capabilities())
    fit_to_model(_flags("--beam", "4", "--title", "x", "--num-sentences", "3"), DecodeConfig(), STORY)
    with pytest.raises(ValueError, match=r"this paraphrase model \(softmax head\) does not use --num-sentences;"):
        fit_to_model(_flags("--beam", "4", "--num-sentences", "3"), DecodeConfig(), PARAPHRASE)


# A bundle built on a pretrained base that says where a writer starts on it (config.json "decode_starts").
BUNDLE_STARTS = (("temperature", 0.8), ("top_k", 40), ("top_p", 0.95), ("repetition_penalty", 1.1))


def test_a_bundles_starts_are_checked_against_the_fields_declarations() -> None:
    raw = {"temperature": 0.8, "top_k": 40, "top_p": 0.95, "repetition_penalty": 1.1}
    assert read_decode_starts(raw) == BUNDLE_STARTS and read_decode_starts({}) == ()
    assert [f.name for f in FIELDS if f.bundle_start] == ["temperature", "top_k", "top_p", "repetition_penalty",
                                                          "guidance"]
    for field in (f for f in FIELDS if f.bundle_start):  # every start a bundle may give, the app's slider can show
        field.check(start_bounds(field).low)
        field.check(start_bounds(field).upper)


def test_a_bundles_start_wins_over_the_heads_and_the_declarations() -> None:
    on_f2 = dataclasses.replace(F2_LM, decode_starts=(("top_k", 40),))
    assert on_f2.start_of(TOP_K) == 40 == on_f2.start_of(TOP_K, flat=True)  # its maker measured the model with it
    assert on_f2.start_of(TOP_P) == TOP_P.writer_start == 0.9  # a field the bundle leaves alone
    assert F2_LM.start_of(TOP_K) == 20 and F2_LM.start_of(TOP_K, flat=True) == 0


def test_cli_applies_a_bundles_starts_to_the_flags_left_unset_as_the_app_starts() -> None:
    model = Capabilities(decode_starts=BUNDLE_STARTS)
    args = _flags()
    assert (args.temperature, args.top_k, args.top_p, args.repetition_penalty) == (None, None, None, None)
    decode = fit_to_model(args, decode_from_flags(args), model)
    assert (decode.temperature, decode.top_k, decode.top_p, decode.repetition_penalty) == (0.8, 40, 0.95, 1.1)
    app = spec.default_values(model)
    assert {name: app[name] for name, _ in BUNDLE_STARTS} == dict(BUNDLE_STARTS)
    given = _flags("--temperature", "1.5", "--top-p", "0.9")  # 0.9 is the declaration's start: still the writer's
    chosen = fit_to_model(given, decode_from_flags(given), model)
    assert (chosen.temperature, chosen.top_k, chosen.top_p, chosen.repetition_penalty) == (1.5, 40, 0.9, 1.1)
