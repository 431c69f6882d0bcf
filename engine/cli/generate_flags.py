"""The `variorum generate` decoding flags read back as settings, fitted to the loaded model's capabilities.

The flags come from the decoding fields' declarations (engine/cli_args.py `add_decode_flags`), and a
flag left unset leaves its field where a writer starts (the declaration's `start`, else its off value),
so the CLI and the app start alike: real words only is on unless `--any-words`, a variant the length
limit stops ends at a sentence unless `--mid-sentence`, top-p is 0.9. A method control's start (k_POS)
applies once the model is loaded and honours it; a flag the model would ignore is refused with the
reason (`Capabilities`), never dropped. A bad value is refused before any model loads, naming its flag.
"""

from __future__ import annotations

import argparse
from typing import Any

from engine.controls import Capabilities
from engine.decode_fields import BY_NAME, FIELDS, DecodeSettingError, NotOffered
from engine.decoding.pos_sampling import parse_pos_bias
from engine.decoding.settings import DecodeConfig

# Flags only a story / abstract model reads (a title and keywords, the number and order of sentences).
PLAN_FLAGS = ("title", "keywords", "num_sentences", "sentence_order")


def decode_from_flags(args: argparse.Namespace) -> DecodeConfig:
    """The settings the flags ask for, checked against their declarations before any model loads."""
    settings: dict[str, Any] = {}
    for field in FIELDS:
        if field.request or isinstance(field.flag, NotOffered):
            continue
        given = getattr(args, field.flag.dest)
        if field.flag.negates:
            settings[field.name] = bool(field.writer_start) and not given
        elif field.kind is dict:
            settings[field.name] = parse_pos_bias(given)
        elif given is not None:  # None: a method control left to `fit_to_model`
            settings[field.name] = given
    try:
        return DecodeConfig(**settings)
    except DecodeSettingError as error:
        named = BY_NAME.get(error.field)
        if named is None or isinstance(named.flag, NotOffered):
            raise
        flag = named.flag
        raise DecodeSettingError(error.naming(flag.name), error.field, error.problem) from None


def fit_to_model(args: argparse.Namespace, decode: DecodeConfig, capabilities: Capabilities) -> DecodeConfig:
    """`decode` for this model: ValueError for flags it would ignore; the writer's start of each method control
    it honours and the flags leave unset (k_POS 20 on a POSG model), unless flat sampling skips their stage."""
    capabilities.head.check(decode.active_fields())
    ignored = [f"--{name.replace('_', '-')}" for name in ignored_flags(args, capabilities)]
    if ignored:
        raise ValueError(f"this {' / '.join(capabilities.tasks)} model ({capabilities.head.name} head) does not use "
                         f"{', '.join(ignored)}; leave them out")
    starts = {field.name: field.start for field in FIELDS
              if field.method and field.start is not None and field.name in capabilities.controls
              and not isinstance(field.flag, NotOffered) and getattr(args, field.flag.dest) is None}
    return decode.replace(**starts) if starts and not decode.flat_sampling else decode


def ignored_flags(args: argparse.Namespace, capabilities: Capabilities) -> list[str]:
    """Given request flags the model does not read: beam search (PermGen only), the sentence plan (story/abstract),
    the copy limit (paraphrases)."""
    ignored = ["beam"] if args.beam > 1 and not capabilities.beam_search else []
    if args.copy_limit and args.task != "paraphrase":
        ignored.append("copy_limit")
    plans = capabilities.paragraph is not None and capabilities.paragraph.sentence_order
    return ignored + [name for name in PLAN_FLAGS if getattr(args, name) not in (None, "") and not plans]
