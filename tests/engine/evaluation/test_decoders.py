"""`variorum eval` honours every DecodeConfig field the app honours: F² class controls and flat
sampling, POSG controls, with the app's capability checks before any decoding."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from engine.bundles.bundle import save_bundle
from engine.decoding import DecodeConfig, VariantStream
from engine.evaluation.continuation import continue_prefixes, make_windows
from engine.evaluation.decoders import check_decoders, parse_decoder
from engine.evaluation.run import main
from engine.heads.posg import POSGHead
from engine.model import LanguageModel
from engine.tokenizer import VariorumTokenizer
from tests.conftest import story_lines, tiny_config
from tests.engine.evaluation.conftest import TINY_SPLIT
from tests.engine.heads.f2_support import build_f2_model, f2_head

POS_TAGS = ["NN", "JJ", "SPECIAL"]


def posg_model(tokenizer: VariorumTokenizer) -> LanguageModel:
    torch.manual_seed(0)
    model = LanguageModel(tiny_config(tokenizer.vocab_size, head="posg", pos_tags=POS_TAGS)).eval()
    assert isinstance(model.head, POSGHead)
    membership = torch.zeros(3, tokenizer.vocab_size, dtype=torch.bool)
    membership[0, 10::2] = membership[1, 11::2] = True  # NN / JJ words
    membership[2, :10] = True  # specials
    model.head.membership.copy_(membership)
    return model


def test_every_app_field_has_a_spec() -> None:
    settings = parse_decoder("topk=40,topp=0.8,temp=1.2,rep=1.1,ctemp=0.7,ctopk=3,rarity=2.5", 9)
    assert (settings.top_k, settings.top_p, settings.temperature, settings.repetition_penalty) == (40, 0.8, 1.2, 1.1)
    assert (settings.class_temperature, settings.class_top_k, settings.class_rarity_bias) == (0.7, 3, 2.5)
    assert parse_decoder("flat,greedy", 9).flat_sampling and parse_decoder("flat,greedy", 9).greedy
    pos = parse_decoder("postopk=20,posbias=adjectives:3,posbias=NN:0.5", 9)
    assert pos.pos_top_k == 20 and pos.pos_bias == {"adjectives": 3.0, "NN": 0.5}
    assert parse_decoder("class_rarity_bias=-1,top_k=5", 9).class_rarity_bias == -1.0  # field names work too
    for bad, message in (("rarity=11", "class_rarity_bias"), ("flat,ctopk=2", "flat_sampling"),
                         ("posbias=JJ", "TAG=FACTOR"), ("ctopk=two", "needs a number"), ("beam=4", "unknown part")):
        with pytest.raises(ValueError, match=message):
            parse_decoder(bad, 9)


def test_capabilities_are_checked_like_the_app(tiny_model: LanguageModel, tokenizer: VariorumTokenizer) -> None:
    f2 = build_f2_model(tokenizer).head.capabilities()
    check_decoders(f2, ["rarity=2,ctopk=2", "flat", "topp=0.9"])
    softmax = tiny_model.head.capabilities()
    check_decoders(softmax, ["flat", "topk=5"])  # flat on a one-group head: nothing to skip, as in the app
    with pytest.raises(ValueError, match=r"'rarity=2'.*frequency classes"):
        check_decoders(softmax, ["topk=5", "rarity=2"])
    with pytest.raises(ValueError, match="POSG"):
        check_decoders(f2, ["postopk=3"])
    posg = posg_model(tokenizer).head.capabilities()
    check_decoders(posg, ["postopk=1,posbias=JJ:5"])
    with pytest.raises(ValueError, match="no POS group"):  # a tag the head does not have
        check_decoders(posg, ["posbias=UH:5"])
    # A termination head offers its inner head's controls (F² classes under ST here).
    check_decoders(build_f2_model(tokenizer, termination="st").head.capabilities(), ["greedy", "rarity=2,ctopk=2"])


def _alone(model: LanguageModel, tokenizer: VariorumTokenizer, prefixes: list[list[int]],
           settings: DecodeConfig, seed: int) -> list[list[int]]:
    outs = []
    for i, prefix in enumerate(prefixes):
        stream = VariantStream(model, tokenizer, prefix, 1, settings.with_seed(seed + i))
        list(stream)
        outs.append([t for t in stream.variants[0].token_ids if t != tokenizer.eos_id])
    return outs


@pytest.mark.parametrize("spec", ["rarity=6,ctopk=2", "flat,topk=30", "ctemp=0.5"])
def test_f2_controls_reach_the_decoder(tokenizer: VariorumTokenizer, spec: str) -> None:
    model = build_f2_model(tokenizer)
    prefixes = [w.prefix for w in make_windows(tokenizer.encode_batch(story_lines()), tokenizer.eos_id, 6, 16, 6)]
    settings = parse_decoder(spec, 16)
    outs = continue_prefixes(model, tokenizer, prefixes, settings, seed=4, batch_size=4)
    assert [c.token_ids for c in outs] == _alone(model, tokenizer, prefixes, settings, 4)
    plain = continue_prefixes(model, tokenizer, prefixes, parse_decoder("sample", 16), seed=4, batch_size=4)
    assert [c.token_ids for c in outs] != [c.token_ids for c in plain]  # the control changed the draws


def test_rarity_bias_moves_eval_continuations_to_rarer_classes(tokenizer: VariorumTokenizer) -> None:
    model = build_f2_model(tokenizer)
    classes = f2_head(model).num_groups
    prefixes = [w.prefix for w in make_windows(tokenizer.encode_batch(story_lines()), tokenizer.eos_id, 4, 12, 8)]

    def mean_class(spec: str) -> float:
        outs = continue_prefixes(model, tokenizer, prefixes, parse_decoder(spec, 12), seed=0, batch_size=8)
        groups = [g for c in outs for g in c.groups]
        return sum(groups) / len(groups)

    assert classes >= 3 and mean_class("rarity=-8") < mean_class("sample") < mean_class("rarity=8")


def test_posg_controls_reach_the_decoder(tokenizer: VariorumTokenizer) -> None:
    model = posg_model(tokenizer)
    prefixes = [[12, 14, 16], [18, 20, 22], [11, 13, 15]]
    settings = parse_decoder("postopk=1,posbias=JJ:10", 8)
    outs = continue_prefixes(model, tokenizer, prefixes, settings, seed=1, batch_size=3)
    assert [c.token_ids for c in outs] == _alone(model, tokenizer, prefixes, settings, 1)
    assert all(g == POS_TAGS.index("JJ") for c in outs for g in c.groups)  # k_POS = 1 after ×10 on JJ
    assert all(t % 2 == 1 and t >= 11 for c in outs for t in c.token_ids)  # JJ's words only


def test_eval_command_on_an_f2_bundle(tokenizer: VariorumTokenizer, tiny_bundle: Path, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    save_bundle(tmp_path / "f2", build_f2_model(tokenizer), tokenizer, "# F² test\n\ntiny\n",
                {"train": {"valid_fraction": 0.2}})
    flags = ["--split-file", str(TINY_SPLIT), "--prefix-len", "6", "--continuation-len", "8", "--max-windows", "6",
             "--nmst-decoders", "greedy", "--nmst-windows", "2", "--nmst-max-length", "10", "--nmst-lengths", "10"]
    decoders = ["--decoders", "topp=0.9", "rarity=4,ctopk=2", "flat,topp=0.9"]
    assert main(["--bundles", str(tmp_path / "f2"), "--out", str(tmp_path / "r"), *flags, *decoders]) == 0
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert set(report["bundles"][0]["result"]["lm"]) == {"topp=0.9", "rarity=4,ctopk=2", "flat,topp=0.9"}
    assert report["settings"]["decoders"] == decoders[1:]
    # a softmax bundle cannot honour class controls: refused before any decoding, with the reason
    capsys.readouterr()
    assert main(["--bundles", str(tmp_path / "f2"), str(tiny_bundle), "--out", str(tmp_path / "s"), *flags,
                 *decoders]) == 2
    assert "frequency classes" in capsys.readouterr().err and not (tmp_path / "s").exists()
