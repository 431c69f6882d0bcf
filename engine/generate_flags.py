"""The `variorum generate` flags as decoding settings, fitted to the loaded model's capabilities.

A flag left unset is left to `DecodeConfig` (its defaults switch each control off), except where a
writer's start is defined (`engine.controls.DECODE_DEFAULTS`, read by the parser): the CLI and the
app start alike (real words only is on unless `--any-words`; a variant the length limit stops ends at a
sentence unless `--mid-sentence`). Once the model is loaded, a flag it would ignore is refused with the
reason (`Capabilities`), never dropped, and a POS-guided model gets the writer's k_POS unless one is given.
"""

from __future__ import annotations

import argparse
import dataclasses

from engine.controls import DECODE_DEFAULTS, Capabilities
from engine.decoding.pos_sampling import parse_pos_bias
from engine.decoding.settings import DecodeConfig

# DecodeConfig fields set by a flag of the same name (None = not given: DecodeConfig's default).
VALUE_FLAGS = ("max_new_tokens", "temperature", "top_k", "top_p", "repetition_penalty", "seed", "pos_top_k",
               "class_temperature", "class_top_k", "class_rarity_bias", "copy_limit")
# Flags only a story / abstract model reads (a title and keywords, the number and order of sentences).
PLAN_FLAGS = ("title", "keywords", "num_sentences", "sentence_order")


def decode_from_flags(args: argparse.Namespace) -> DecodeConfig:
    """The settings the flags ask for, validated before any model loads (DecodeSettingError names the flag)."""
    given = {name: getattr(args, name) for name in VALUE_FLAGS if getattr(args, name) is not None}
    return DecodeConfig(greedy=args.greedy, flat_sampling=args.flat_sampling, pos_bias=parse_pos_bias(args.pos_bias),
                        real_words=DECODE_DEFAULTS.real_words and not args.any_words,
                        end_at_sentence=DECODE_DEFAULTS.end_at_sentence and not args.mid_sentence, **given)


def fit_to_model(args: argparse.Namespace, decode: DecodeConfig, capabilities: Capabilities) -> DecodeConfig:
    """`decode` for this model: ValueError for flags it would ignore; the writer's k_POS on a POSG model."""
    capabilities.head.check(decode.active_fields())
    ignored = [f"--{name.replace('_', '-')}" for name in ignored_flags(args, capabilities)]
    if ignored:
        raise ValueError(f"this {' / '.join(capabilities.tasks)} model ({capabilities.head.name} head) does not use "
                         f"{', '.join(ignored)}; leave them out")
    if args.pos_top_k is None and "pos_top_k" in capabilities.controls and not decode.flat_sampling:
        return dataclasses.replace(decode, pos_top_k=DECODE_DEFAULTS.pos_top_k)
    return decode


def ignored_flags(args: argparse.Namespace, capabilities: Capabilities) -> list[str]:
    """Given request flags the model does not read: beam search (PermGen only), the sentence plan (story/abstract),
    the copy limit (paraphrases)."""
    ignored = ["beam"] if args.beam > 1 and not capabilities.beam_search else []
    if args.copy_limit and args.task != "paraphrase":
        ignored.append("copy_limit")
    plans = capabilities.paragraph is not None and capabilities.paragraph.sentence_order
    return ignored + [name for name in PLAN_FLAGS if getattr(args, name) not in (None, "") and not plans]
