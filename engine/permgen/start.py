"""What a PermGen fine-tune takes from its start bundle (`--init-from`) beyond its weights and tokenizer.

Starts. A PermGen bundle of either layout, or a Llama language model (the pretrained base): that starts
the decoder-only layout (engine/permgen/decoder_model.py), whose tensors are named as the language
model's, and its sentence marks' rows are spelled from text the base reads (`spell_marks`).

Sizes. A run copies every tensor of the start bundle (engine/training/start_weights.py), so its model
must have the bundle's sizes. `start_sizes` reads them from the bundle's config.json, and the run
takes them as its defaults (a `--config` file and flags given explicitly still win): a writer
fine-tuning an imported BART-base does not repeat its 6 + 6 layers × 768, 12 heads, 3,072-wide
feed-forward, 1,024 source positions, 50,285 tokens, nor its cased text (`lowercase` False). A
language model's whole "model" section is the run's default, as `variorum train --init-from` takes it
(its Llama fields, its window, its dropout, its softmax), with the decoder-only layout and the cased
text a language model implies. The task, the decoder positions and the order (`permute`) are the run's own
choices, PermGen's by default.

Positions. An imported BART has absolute decoder positions (engine/permgen/bart_import.py); PermGen
writes with hierarchical ones (paper Eq. 4). `start_with_positions` gives the start model in the
run's kind of positions, everything else unchanged, for the usual copy:

- absolute → hierarchical: in-sentence position j starts at the checkpoint's absolute row j (each
  sentence's tokens are placed as the checkpoint placed the first tokens of a text), and every
  sentence-index row at zero (no sentence is favoured before the fine-tune learns which is which);
- hierarchical → absolute: absolute row j starts at in-sentence row j (rows past it at zero).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from engine.bundled_model import BundledModel
from engine.config import ConfigError
from engine.model import LanguageModel
from engine.permgen.config import PermGenConfig
from engine.permgen.decoder_model import DecoderPermGenModel, spell_marks
from engine.permgen.model import PermGenModel
from engine.permgen.network import PermGenNetwork
from engine.tokenizer import VariorumTokenizer
from engine.training.start_weights import copy_start_weights, start_bundle_config

MODEL_SIZES = ("vocab_size", "n_layer", "n_head", "n_embd", "tie_embeddings")
PERMGEN_SIZES = ("encoder_layers", "ffn_dim", "max_source_len", "max_sentence_len", "lowercase", "layout")
LANGUAGE_MODEL_START = {"layout": "decoder-only", "lowercase": False}  # a pretrained base reads cased text
POSITION_TABLES = tuple(f"backbone.decoder.{name}." for name in ("embed_positions", "embed_sentence", "embed_local"))


def start_sizes(init_from: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The "model" and "permgen" settings of the start bundle a run must share with it (see the docstring)."""
    config = start_bundle_config(str(init_from))  # a checkpoint folder is refused, saying how to start from it
    model, permgen = config["model"], config.get("permgen", {})
    if config["kind"] == "permgen":
        sizes = {k: model[k] for k in MODEL_SIZES if k in model}
        return sizes, {k: permgen[k] for k in PERMGEN_SIZES if k in permgen}
    if config["kind"] != "lm" or model.get("backbone") != "llama":
        raise ConfigError(f"init_from {init_from}: PermGen starts from a PermGen bundle or a Llama language model, "
                          f"not a {config['kind']!r} bundle of backbone {model.get('backbone')!r}")
    return dict(model), dict(LANGUAGE_MODEL_START)


def start_model(model: PermGenNetwork[Any], start: BundledModel, tokenizer: VariorumTokenizer,
                init_from: str) -> tuple[str, ...]:
    """Give the run's `model` the weights of the start bundle's model `start` (a PermGen model of its layout, or
    a language model for the decoder-only layout); returns the name prefixes of the parameters the start did
    not have (the new position tables), which train in every setting."""
    layout = model.config.layout
    if isinstance(start, PermGenNetwork):
        if start.config.layout != layout:
            raise ConfigError(f"init_from {init_from}: its PermGen model has the {start.config.layout} layout, the "
                              f"run the {layout} one")
    elif not (isinstance(start, LanguageModel) and isinstance(model, DecoderPermGenModel)):
        raise ConfigError(f"init_from {init_from}: a language model starts the decoder-only layout only (the run "
                          f"has the {layout} one)")
    if isinstance(start, PermGenModel):
        copy_start_weights(model, start_with_positions(start, model.config), init_from)
        return POSITION_TABLES if start.config.positions != model.config.positions else ()
    copy_start_weights(model, start, init_from)
    if isinstance(model, DecoderPermGenModel) and isinstance(start, LanguageModel):
        spell_marks(model, tokenizer)  # the base's mark rows are all one point (engine/permgen/decoder_model.py)
    return ()


def start_with_positions(start: PermGenModel, config: PermGenConfig) -> PermGenModel:
    """`start` itself when its decoder positions are the run's kind, else its weights in a model of the
    run's kind of positions and `max_sentence_len` (the new position tables as the docstring says)."""
    if start.config.positions == config.positions:
        return start
    settings = {**start.config.to_dict(), "positions": config.positions, "max_sentence_len": config.max_sentence_len}
    with torch.random.fork_rng(devices=[]):  # every tensor is set below: leave the run's random numbers alone
        moved = PermGenModel(PermGenConfig.from_dict(settings))
    ours, theirs = moved.backbone.decoder, start.backbone.decoder
    state = {k: v for k, v in start.state_dict().items() if not k.startswith(POSITION_TABLES)}
    missing, unexpected = moved.load_state_dict(state, strict=False)
    if unexpected or not all(k.startswith(POSITION_TABLES) for k in missing):  # the two differ in more than positions
        raise ValueError(f"the start model differs from the run's beyond its positions ({[*unexpected, *missing][:3]})")
    with torch.no_grad():
        if ours.embed_positions is None:  # absolute → hierarchical
            assert ours.embed_local is not None and ours.embed_sentence is not None
            assert theirs.embed_positions is not None
            _copy_rows(ours.embed_local.weight, theirs.embed_positions.weight)  # [max_sentence_len, D]
            ours.embed_sentence.weight.zero_()  # [T + 1, D]
        else:  # hierarchical → absolute
            assert theirs.embed_local is not None
            _copy_rows(ours.embed_positions.weight, theirs.embed_local.weight)  # [max_target_len, D]
    return moved


def _copy_rows(target: torch.Tensor, source: torch.Tensor) -> None:
    """target[j] = source[j] for the rows both have; target's further rows zero."""
    rows = min(len(target), len(source))
    target.zero_()
    target[:rows] = source[:rows]
