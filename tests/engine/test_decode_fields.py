"""Each decoding field is declared once (engine/decode_fields) and the CLI and eval surfaces derive from it:
a declared flag or alias is offered, nothing undeclared is, and a field a surface leaves out says why.
(The app's controls: tests/app/test_decode_fields.py, with the three surfaces' refusals side by side.)"""

from __future__ import annotations

import argparse
import dataclasses
import typing

import pytest

from engine.cli.generate_flags import decode_from_flags
from engine.cli.main import build_parser
from engine.controls import CLASS_CONTROLS, POS_CONTROLS
from engine.decode_fields import (
    BY_NAME,
    FIELDS,
    SEED,
    TOP_P,
    Bounds,
    DecodeField,
    DecodeSettingError,
    NotOffered,
    Slider,
)
from engine.decoding import DecodeConfig, generate_variants
from engine.decoding.token_sampler import TokenSampler
from engine.evaluation.decoders import ALIASES, KEYS, parse_decoder
from engine.loaded_model import GenerationRequest
from engine.model import LanguageModel
from engine.tokenizer import VariorumTokenizer


def _generate_parser() -> argparse.ArgumentParser:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    generate: argparse.ArgumentParser = sub.choices["generate"]
    return generate


def _decoding_group(generate: argparse.ArgumentParser) -> list[argparse.Action]:
    return list(next(g for g in generate._action_groups if g.title == "decoding")._group_actions)


def test_the_declarations_are_decode_configs_fields_with_their_types() -> None:
    assert {f.name for f in dataclasses.fields(DecodeConfig)} == {f.name for f in FIELDS if not f.request}
    for field in FIELDS:
        hint = typing.get_type_hints(GenerationRequest if field.request else DecodeConfig)[field.name]
        expected = field.kind | None if field.optional else field.kind
        assert typing.get_origin(hint) is dict if field.kind is dict else hint == expected, field.name


@pytest.mark.parametrize("field", FIELDS, ids=lambda f: f.name)
def test_each_declaration_is_complete_and_consistent(field: DecodeField[object]) -> None:
    assert field.label and field.help
    for surface in (field.flag, field.alias, field.control):  # a surface leaving the field out says why
        assert not isinstance(surface, NotOffered) or surface.why
    if field.kind in (int, float):
        assert isinstance(field.bounds, Bounds) and field.why
        for value in (field.off, field.writer_start):
            assert value is None or field.bounds.holds(value), (field.name, value)  # type: ignore[arg-type]
    if isinstance(field.control, Slider):  # the writer's range lies within the maths' range
        assert field.bounds is not None and field.bounds.holds(field.control.low) and field.bounds.holds(
            field.control.high)
        assert field.control.low <= field.writer_start <= field.control.high  # type: ignore[operator]
    assert (field.name in CLASS_CONTROLS) == (field.method == "f2")
    assert (field.name in POS_CONTROLS) == (field.method == "posg")


def test_every_declared_flag_is_a_generate_flag_and_every_decoding_flag_is_declared() -> None:
    generate = _generate_parser()
    declared = {f.flag.name for f in FIELDS if not isinstance(f.flag, NotOffered)}
    assert {option for action in _decoding_group(generate) for option in action.option_strings} == declared
    settings = {f.name for f in FIELDS} | {f.flag.dest for f in FIELDS if not isinstance(f.flag, NotOffered)}
    outside = {a.dest for a in generate._actions if a not in _decoding_group(generate)}
    assert not outside & settings  # no decoding setting has a hand-written flag beside the derived ones


def test_every_declared_alias_is_a_decoder_part_and_nothing_else_is() -> None:
    declared = {f.alias: f for f in FIELDS if not isinstance(f.alias, NotOffered)}
    assert declared == ALIASES
    for alias, field in declared.items():
        value = 2 if field.bounds is not None and field.bounds.holds(2) else 0.5  # away from every off value
        part = alias if field.kind is bool else "posbias=JJ:2" if field.kind is dict else f"{alias}={value}"
        settings = parse_decoder(part, 5)
        assert getattr(settings, field.name) != field.off, alias  # the part reaches its field
    for undeclared in ("max_new_tokens=5", "seed=1", "end_at_sentence", "beam=4", "beam_width=4", "nucleus=0.9"):
        with pytest.raises(ValueError, match="unknown part"):
            parse_decoder(undeclared, 5)


def test_a_field_left_off_a_surface_is_not_there() -> None:
    dests = {action.dest for action in _generate_parser()._actions}
    for field in FIELDS:
        if isinstance(field.alias, NotOffered):
            assert field.name not in KEYS
        if isinstance(field.flag, NotOffered):
            assert field.name not in dests


def test_a_bad_value_names_its_field_its_value_and_its_bounds_on_the_cli_and_in_eval() -> None:
    with pytest.raises(DecodeSettingError, match=r"^--top-p must be in \(0, 1\] \(1 = off\), got 1.5$"):
        decode_from_flags(build_parser().parse_args(["generate", "--top-p", "1.5"]))
    eval_message = r"^decoder 'topp=1.5': topp \(top_p\) must be in \(0, 1\] \(1 = off\), got 1.5$"
    with pytest.raises(ValueError, match=eval_message):
        parse_decoder("topp=1.5", 5)
    with pytest.raises(DecodeSettingError, match=r"^top_p must be in \(0, 1\] \(1 = off\), got 1.5$"):
        DecodeConfig(top_p=1.5)


def test_replace_and_with_seed_check_only_what_they_change(monkeypatch: pytest.MonkeyPatch) -> None:
    config = DecodeConfig(top_p=0.9, pos_top_k=5)
    seeded = dataclasses.replace(config, seed=7)  # checks every field again
    checked: list[str] = []
    original = DecodeField.check
    monkeypatch.setattr(DecodeField, "check", lambda self, value: (checked.append(self.name), original(self, value)))
    assert config.with_seed(7) == seeded
    assert checked == ["seed"]
    with pytest.raises(DecodeSettingError, match="seed must be in"):
        config.with_seed(SEED.bounds.upper + 1)  # type: ignore[union-attr, operator]
    with pytest.raises(DecodeSettingError, match="flat_sampling skips"):
        config.replace(flat_sampling=True)  # the combination is checked too
    with pytest.raises(DecodeSettingError, match="not a decoding setting"):
        config.replace(nucleus=0.5)


def test_bounds_read_as_written() -> None:
    assert TOP_P.bounds is not None and TOP_P.bounds.text() == "in (0, 1]"
    assert not TOP_P.bounds.holds(0.0) and TOP_P.bounds.holds(1e-300) and not TOP_P.bounds.holds(float("nan"))
    assert BY_NAME["top_k"].bounds == Bounds(0) and Bounds(0).text() == ">= 0"
    assert SEED.bounds is not None and SEED.bounds.text() == "in [0, 9223372036854775743]"
    assert SEED.bounds.holds(2**63 - 65) and not SEED.bounds.holds(2**63 - 64)  # integer bounds stay exact


def test_a_request_is_checked_once_and_sampled_with_one_sampler(
    tiny_model: LanguageModel, tokenizer: VariorumTokenizer, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = DecodeConfig(seed=5, top_p=0.8, temperature=0.9, max_new_tokens=6)  # checked here, once
    samplers: list[TokenSampler] = []
    checked: list[str] = []
    build, check = TokenSampler.__init__, DecodeField.check
    monkeypatch.setattr(TokenSampler, "__init__", lambda self, *a: (samplers.append(self), build(self, *a))[1])
    monkeypatch.setattr(DecodeField, "check", lambda self, value: (checked.append(self.name), check(self, value))[1])
    generate_variants(tiny_model, tokenizer, "Mara found", 3, settings)
    assert len(samplers) == 1 and checked == []
