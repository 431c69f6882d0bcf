"""Command-line flags generated from config dataclasses, so flags and configs cannot drift."""

from __future__ import annotations

import argparse
import dataclasses
import typing
from typing import Any, TypeVar

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


def dataclass_from_flags(cls: type[T], namespace: argparse.Namespace, base: T | None = None) -> T:
    """`base` (or the defaults) with every flag the user actually gave applied on top."""
    start = dataclasses.asdict(base) if base is not None else {}  # type: ignore[call-overload]
    given = {
        f.name: getattr(namespace, f.name)
        for f in dataclasses.fields(cls)  # type: ignore[arg-type]
        if getattr(namespace, f.name, None) is not None
    }
    return cls(**{**start, **given})
