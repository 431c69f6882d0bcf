"""Evaluation entry point for a bundle: `variorum perplexity --bundle B --files F …`.

Perplexity is exp(mean NLL per BPE token) over all held-out blocks: the documents of the
files that the deterministic hash split puts in validation (with the bundle's own
`valid_fraction`), encoded and blocked exactly as in training (`lm_perplexity`). Each family says
what it measures (engine/families `held_out_perplexity`): for a PermGen bundle it is the held-out
target NLL of engine/permgen/heldout.py (natural and random sentence order).

Any file must get an answer in bounded time (docs/engine-input-safety.md): a run of more than
`MAX_WORD_CHARS` characters without a space (or of spaces) is encoded in pieces of that length, since
BPE's time grows faster than the length of one "word" and no word of prose comes near the limit; at
most `MAX_TOKENS` tokens are scored (the numbers say how many of the held-out tokens that was); and a
perplexity too large for a float is reported as `Infinity` rather than failing.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from tqdm import tqdm

from engine.bundles.bundle import Bundle, bundle_family, load_bundle
from engine.cli_errors import reports_user_errors
from engine.data.blocks import make_blocks
from engine.data.corpus import read_corpus, split_documents
from engine.decoding.backbone_runner import BackboneRunner
from engine.model import LanguageModel
from engine.tokenizer import VariorumTokenizer
from engine.torch_modes import eval_mode

MAX_WORD_CHARS = 1000
# Held-out tokens scored at most: the five ROCStories files' held-out split is well under it, and past
# it the mean NLL moves in the fourth digit while the time (minutes per million tokens on a laptop CPU)
# does not stop growing.
MAX_TOKENS = 1_000_000
_LONG_RUN = re.compile(rf"\S{{{MAX_WORD_CHARS},}}|\s{{{MAX_WORD_CHARS},}}")


@torch.no_grad()
def block_perplexity(
    model: LanguageModel, blocks: torch.Tensor, batch_size: int = 16, runner: BackboneRunner[Any] | None = None,
    progress: bool = False,
) -> tuple[float, float]:
    """(mean NLL, perplexity) over every block [num_blocks, block_size + 1]; `progress`: a bar on stderr.

    With a `runner` (e.g. an ONNX decoder, engine/onnx) the hidden states come from it and the
    model's own head scores them, so a runner is measured exactly as the torch model is."""
    device = next(model.parameters()).device
    total, count = 0.0, 0
    with eval_mode(model):
        for start in tqdm(range(0, len(blocks), batch_size), disable=not progress, unit="batch", leave=False):
            block = blocks[start : start + batch_size].to(device)
            inputs, targets = block[:, :-1], block[:, 1:]
            if runner is None:
                total += float(model(inputs, targets)) * targets.numel()
            else:  # hidden [B, T, D] from position 0 of an empty cache
                total += float(model.token_nll(runner.decode(inputs, runner.new_cache(len(block))), targets).sum())
            count += targets.numel()
    if count == 0:
        raise ValueError("no tokens to evaluate")
    mean = total / count
    return mean, math.exp(min(mean, 50))


def held_out_documents(bundle: Bundle, files: list[Path], fraction: float | None = None,
                       everything: bool = False) -> list[str]:
    """The documents of `files` the hash split holds out with `fraction` (default: the bundle's training
    split), or all of them (`everything`)."""
    if fraction is None:
        fraction = float(bundle.provenance.get("train", {}).get("valid_fraction", 0.05))
    documents = read_corpus(files)
    chosen = documents if everything else split_documents(documents, fraction)[1]
    if not chosen:
        raise ValueError("the held-out split of these files is empty; pass --all or other --files")
    return chosen


def held_out_blocks(bundle: Bundle, files: list[Path], fraction: float | None = None,
                    everything: bool = False) -> tuple[int, torch.Tensor]:
    """(documents, blocks [num_blocks, block_size + 1]) of `held_out_documents`."""
    held_out = held_out_documents(bundle, files, fraction, everything)
    return len(held_out), _blocks(bundle, encode_documents(bundle.tokenizer, held_out))


def encode_documents(tokenizer: VariorumTokenizer, documents: Sequence[str]) -> list[list[int]]:
    """Each document's token ids, as `encode_batch` gives them, except that a run of more than
    `MAX_WORD_CHARS` non-space (or space) characters is encoded in pieces of that length."""
    pieces: list[str] = []
    owners: list[int] = []
    for index, document in enumerate(documents):
        cut = _bounded_pieces(document)
        pieces += cut
        owners += [index] * len(cut)
    encoded: list[list[int]] = [[] for _ in documents]
    for owner, ids in zip(owners, tokenizer.encode_batch(pieces), strict=True):
        encoded[owner] += ids
    return encoded


def _bounded_pieces(text: str) -> list[str]:
    """`text` cut around and inside its runs longer than `MAX_WORD_CHARS`; [text] when it has none."""
    pieces: list[str] = []
    start = 0
    for run in _LONG_RUN.finditer(text):
        if run.start() > start:
            pieces.append(text[start : run.start()])
        end = run.end()
        pieces += [text[at : min(at + MAX_WORD_CHARS, end)] for at in range(run.start(), end, MAX_WORD_CHARS)]
        start = end
    if start < len(text) or not pieces:
        pieces.append(text[start:])
    return pieces


def _blocks(bundle: Bundle, encoded: list[list[int]]) -> torch.Tensor:
    return make_blocks(encoded, bundle.tokenizer.eos_id, bundle.model.config.block_size)


def tokens_per_word(documents: list[str], encoded: list[list[int]]) -> float:
    """Tokens of the eos-separated stream per word, a word being a whitespace-separated string and each
    document's end counting as one (so models with different tokenizers compare per word)."""
    return sum(len(ids) + 1 for ids in encoded) / sum(len(d.split()) + 1 for d in documents)


def lm_perplexity(directory: Path, files: list[Path], fraction: float | None = None,
                  everything: bool = False) -> dict[str, Any]:
    """A language-model bundle's perplexity (per token and per word) on `held_out_documents`."""
    bundle = load_bundle(directory)
    documents = held_out_documents(bundle, files, fraction, everything)
    encoded = encode_documents(bundle.tokenizer, documents)
    blocks = _blocks(bundle, encoded)
    scored = blocks[: max(1, MAX_TOKENS // max(1, blocks.shape[1] - 1))]
    loss, _ = block_perplexity(bundle.model, scored, progress=sys.stderr.isatty())
    ratio = tokens_per_word(documents, encoded)
    numbers: dict[str, Any] = {
        "documents": len(documents), "tokens": int(scored[:, 1:].numel()), "loss": round(loss, 4),
        "perplexity": round(_exp(loss), 2), "perplexity_per_word": round(_exp(loss * ratio), 2)}
    if len(scored) < len(blocks):
        numbers["held_out_tokens"] = int(blocks[:, 1:].numel())  # the first MAX_TOKENS of these were scored
    return numbers


def _exp(value: float) -> float:
    """exp(value), or inf where that is beyond a float (a text of NUL bytes or emoji: thousands of tokens
    per "word", each very unlikely, make the per-word number overflow)."""
    try:
        return math.exp(value)
    except OverflowError:
        return math.inf


@reports_user_errors("perplexity")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="variorum perplexity", description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", type=Path, required=True)
    parser.add_argument("--files", type=Path, nargs="+", required=True)
    parser.add_argument("--valid-fraction", type=float, help="default: the bundle's training split")
    parser.add_argument("--all", action="store_true", help="evaluate on every document, not the held-out split")
    args = parser.parse_args(argv)
    family = bundle_family(args.bundle)
    print(json.dumps(family.held_out_perplexity(args.bundle, args.files, args.valid_fraction, args.all)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
