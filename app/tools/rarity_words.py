"""Measure how many non-words the F² rarity bias brings, to place the "Rarer words" slider's labels.

    python -m app.tools.rarity_words [--bundle DIR] [--biases 0 0.4 0.8 …]

For each bias, 8 variants of each of 4 prompts (seed 1, top-p 0.9, 60 tokens, real words off) are
written; a word is a non-word when it is neither one of the bundle's training words nor in the
`wordfreq` English list. Prints the share of non-words and how many variants hit the length limit.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import wordfreq

from engine.front_door import RESOURCES_MODELS, DecodeConfig, Engine, GenerationRequest, LoadedModel
from engine.word_sources import read_bundle_words

PROMPTS = ("Jenny wanted to learn to bake bread.", "Tom was late for work.", "The dog ran into the yard.",
           "Amy found a lost kitten.")
BIASES = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0, 1.5, 2.0, 3.0, 5.0)
WORD = re.compile(r"[A-Za-z']+")


def is_word(word: str, known: frozenset[str]) -> bool:
    """A training word of the bundle or a word of the English list (apostrophes at the ends dropped)."""
    word = word.lower().strip("'")
    return not word or word in known or wordfreq.zipf_frequency(word, "en") > 0


def measure(model: LoadedModel, known: frozenset[str], bias: float) -> tuple[float, int, int]:
    """Non-word share, variants cut by the length limit, variants written."""
    words = bad = cut = written = 0
    for prompt in PROMPTS:
        decode = DecodeConfig(seed=1, top_p=0.9, max_new_tokens=60, class_rarity_bias=bias)
        for variant in model.generate(GenerationRequest(prompt=prompt, n=8, decode=decode)):
            written += 1
            cut += variant.finish_reason == "length"
            found = WORD.findall(variant.text)
            words += len(found)
            bad += sum(not is_word(w, known) for w in found)
    return bad / max(words, 1), cut, written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bundle", type=Path, default=RESOURCES_MODELS / "continue-f2-nmst")
    parser.add_argument("--biases", type=float, nargs="+", default=list(BIASES))
    args = parser.parse_args(argv)
    model = Engine().load(args.bundle, "cpu", "torch")
    known = read_bundle_words(args.bundle) or frozenset()
    for bias in args.biases:
        share, cut, written = measure(model, known, bias)
        print(f"rarity bias {bias:+.1f}: non-words {100 * share:.1f}%; length limit hit by {cut}/{written} variants",
              flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
