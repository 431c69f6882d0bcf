"""Command-line flags generated from config dataclasses and from the decoding fields' declarations, so flags
and what they set cannot drift. No torch: `variorum generate --help` is built from these alone."""

from __future__ import annotations

import argparse
import dataclasses
import typing
from typing import Any, TypeVar

from engine.config import ConfigError
from engine.controls import METHOD_NEEDS
from engine.decode_fields import FIELDS, DecodeField, Flag, NotOffered, number_text

T = TypeVar("T")


def add_dataclass_flags(parser: argparse.ArgumentParser, cls: type[Any], skip: tuple[str, ...] = ()) -> None:
    """One `--field-name` flag per field of `cls`, typed by its annotation, defaulting to None."""
    hints = typing.get_type_hints(cls)
    group = parser.add_argument_group(cls.__name__)
    for f in dataclasses.fields(cls):
        if f.name in skip:
            continue
        flag = "--" + f.name.replace("_", "-")
        hint = hints[f.name]
        if hint is bool or hint == bool | None:  # None: the run decides (e.g. TrainConfig.compile)
            group.add_argument(flag, dest=f.name, action=argparse.BooleanOptionalAction, default=None)
        elif typing.get_origin(hint) is list:
            (item,) = typing.get_args(hint)
            group.add_argument(flag, dest=f.name, nargs="+", type=item, default=None)
        else:
            args = [a for a in typing.get_args(hint) if a is not type(None)]
            group.add_argument(flag, dest=f.name, type=args[0] if args else hint, default=None)


def flags_given(cls: type[Any], namespace: argparse.Namespace) -> dict[str, Any]:
    """The fields of dataclass `cls` whose flags the user actually gave, with their values."""
    return {
        f.name: getattr(namespace, f.name)
        for f in dataclasses.fields(cls)
        if getattr(namespace, f.name, None) is not None
    }


def dataclass_from_flags(cls: type[T], namespace: argparse.Namespace, base: T | None = None) -> T:
    """`base` (or the defaults) with every flag the user actually gave applied on top."""
    start = dataclasses.asdict(base) if base is not None else {}  # type: ignore[call-overload]
    return cls(**{**start, **flags_given(cls, namespace)})


def check_start_flags(namespace: argparse.Namespace, init_from: str) -> None:
    """A fine-tune (`init_from`) keeps its start bundle's tokenizer, so a vocabulary size on the command line
    cannot be honoured: refused, as sizes that differ from the bundle's weights are (`ConfigError`)."""
    if init_from and getattr(namespace, "vocab_size", None) is not None:
        raise ConfigError(f"--vocab-size cannot change a fine-tune's vocabulary: the start bundle {init_from} "
                          "brings its tokenizer; leave out --vocab-size")


def add_decode_flags(parser: argparse.ArgumentParser) -> None:
    """One flag per decoding field that declares one (engine/decode_fields), typed, bounded and explained as
    declared; `generate_flags.decode_from_flags` reads them back."""
    group = parser.add_argument_group("decoding", "how the variants are written")
    for field in FIELDS:
        flag = field.flag
        if isinstance(flag, NotOffered):
            continue
        if field.kind is bool:
            group.add_argument(flag.name, dest=flag.dest, action="store_true", help=flag.help)
        elif field.kind is dict:
            group.add_argument(flag.name, dest=flag.dest, nargs="+", default=[], metavar=flag.metavar,
                               help=f"{flag.help}, {field.bounds.text() if field.bounds else ''}")
        else:  # a number; a start that depends on the model is applied once it loads (generate_flags.fit_to_model)
            group.add_argument(flag.name, dest=flag.dest, type=field.kind, metavar=flag.metavar,
                               default=None if field.starts_by_model else field.writer_start,
                               help=_number_help(field, flag))


def _number_help(field: DecodeField[object], flag: Flag) -> str:
    """The flag's help with the field's bounds, what its off value means and where a writer starts."""
    bounds = f" {field.bounds.text()}" if field.bounds else ""
    start = "" if field.start is None else f"; default {number_text(field.start)}"
    if field.method and field.start is not None:
        start += " on a model that honours it, off with --flat-sampling"
    for method, value in field.method_starts:
        start += f"; {number_text(value)} for {METHOD_NEEDS[method]} unless --flat-sampling"
    return f"{flag.help}:{bounds}{field.off_note}{start}"
