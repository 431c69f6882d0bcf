"""The `variorum generate` decoding flags read back as settings, fitted to the loaded model's capabilities.

The flags come from the decoding fields' declarations (engine/cli_args.py `add_decode_flags`), and a
flag left unset leaves its field where a writer starts (the declaration's `start`, else its off value),
so the CLI and the app start alike: real words only is on unless `--any-words`, a variant the length
limit stops ends at a sentence unless `--mid-sentence`, top-p is 0.9. A start that depends on the model
(k_POS on a POSG model, top-k 20 on an F² model: `DecodeField.method_starts`; the sampling starts a bundle
gives in its config.json: `Capabilities.decode_starts`) applies once it is loaded; a flag the model would
ignore is refused with the reason (`Capabilities`), never dropped. A bad value is refused before any model
loads, naming its flag.
"""

from __future__ import annotations

import argparse
from typing import Any

from engine.controls import Capabilities
from engine.decode_fields import BY_NAME, DRAFTS, FIELDS, DecodeField, DecodeSettingError, NotOffered
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
        elif given is not None:
            settings[field.name] = given
        elif not field.method:  # left unset: the declaration's start until `fit_to_model` has the model's
            settings[field.name] = field.writer_start
    try:
        return DecodeConfig(**settings)
    except DecodeSettingError as error:
        named = BY_NAME.get(error.field)
        if named is None or isinstance(named.flag, NotOffered):
            raise
        flag = named.flag
        raise DecodeSettingError(error.naming(flag.name), error.field, error.problem) from None


def fit_to_model(args: argparse.Namespace, decode: DecodeConfig, capabilities: Capabilities) -> DecodeConfig:
    """`decode` for this model: ValueError for flags it would ignore; where a writer starts on it (`model_starts`)
    for each field the flags leave unset."""
    capabilities.head.check(decode.active_fields())
    ignored = [f"--{name.replace('_', '-')}" for name in ignored_flags(args, capabilities)]
    if ignored:
        raise ValueError(f"this {' / '.join(capabilities.tasks)} model ({capabilities.head.name} head) does not use "
                         f"{', '.join(ignored)}; leave them out")
    starts = model_starts(unset_fields(args), capabilities, decode.flat_sampling)
    if not drafts_apply(args, capabilities):  # nothing to choose among: one each, as the app sends
        starts[DRAFTS.name] = DRAFTS.off
    return decode.replace(**starts) if starts else decode


def unset_fields(args: argparse.Namespace) -> list[DecodeField[Any]]:
    """The decoding fields whose flags `args` leaves unset (their start may depend on the model)."""
    return [field for field in FIELDS
            if not isinstance(field.flag, NotOffered) and getattr(args, field.flag.dest) is None]


def drafts_apply(args: argparse.Namespace, capabilities: Capabilities) -> bool:
    """Whether choosing among drafts applies to this request: sampled Continue, Story and Abstract variants, and
    sampled paraphrases on a model whose meaning floor chooses among drafts (`Capabilities.chooses_drafts`)."""
    return bool(args.beam <= 1 and capabilities.chooses_drafts(args.task))


def model_starts(fields: list[DecodeField[Any]], capabilities: Capabilities, flat: bool) -> dict[str, Any]:
    """Where a writer starts on this model, of `fields` whose start depends on it: a method control it honours
    (k_POS 20 on a POSG model), a field with a start per head method (top-k 20 on an F² model) and a sampling
    field its bundle starts (`Capabilities.start_of`, which wins). Flat sampling skips the group stage, so it
    starts every head-dependent field where a one-group model does."""
    starts = {field.name: capabilities.start_of(field, flat) for field in fields
              if field.method_starts or field.bundle_start}
    starts.update({field.name: field.start for field in fields if field.method and field.start is not None
                   and field.name in capabilities.controls and not flat})
    return starts


def ignored_flags(args: argparse.Namespace, capabilities: Capabilities) -> list[str]:
    """Given request flags the model does not read: beam search (PermGen only), the sentence plan (story/abstract),
    the copy limit (paraphrases), drafts (not for beams, nor for paraphrases without a meaning floor)."""
    ignored = ["beam"] if args.beam > 1 and not capabilities.beam_search else []
    if args.copy_limit and args.task != "paraphrase":
        ignored.append("copy_limit")
    # the flag defaults to where a writer starts (2), which a model without drafts to choose among simply does not use
    if args.drafts not in (None, DRAFTS.off, DRAFTS.writer_start) and not drafts_apply(args, capabilities):
        ignored.append("drafts")
    plans = capabilities.paragraph is not None and capabilities.paragraph.sentence_order
    return ignored + [name for name in PLAN_FLAGS if getattr(args, name) not in (None, "") and not plans]
