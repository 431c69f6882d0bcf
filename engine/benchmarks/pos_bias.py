"""How far the POS bias sliders move a shipped POSG model's text: adjective share with and without a bias.

For each held-out ROCStories story (the first sentence is the prompt; the bundle's training split never
saw these stories), the model writes `--variants` continuations with the app's defaults, once plain and
once with `--pos-bias` (default adjectives ×10). spaCy tags both sets and the table prints the share of
adjective words (JJ, JJR, JJS) among all words, adjectives per sentence, and their ratios.

    python -m engine.benchmarks.pos_bias [--bundle resources/models/continue-posg-nmst] [--prompts 40]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from engine.data.corpus import read_corpus, split_documents
from engine.decode_fields import POS_TOP_K, REAL_WORDS, TOP_P
from engine.decoding import DecodeConfig
from engine.evaluation.splits import default_data_root
from engine.front_door import RESOURCES_MODELS, Engine, GenerationRequest
from engine.pos.backends import load_tagger
from engine.pos.diversity import adjectives_per_sentence
from engine.pos.tags import tags_of_group

ROC_FILES = ("rocstories/diffusion_lm/roc_valid.json",)


def held_out_prompts(data_root: Path, count: int) -> list[str]:
    """First sentences of held-out stories (hash split, fraction 0.05, as the bundles' training split)."""
    _, held_out = split_documents(read_corpus([data_root / f for f in ROC_FILES]), 0.05)
    return [story.split(". ")[0] + "." for story in held_out[:count]]


def adjective_share(texts: list[str]) -> tuple[float, float]:
    """(adjectives / words, adjectives / sentence) of `texts`, tagged by spaCy."""
    words = load_tagger("spacy").tag_texts(texts, progress=False)
    adjectives = set(tags_of_group("adjectives"))
    total = sum(len(w) for w in words)
    share = sum(t.tag_ in adjectives for w in words for t in w) / max(total, 1)
    return share, adjectives_per_sentence(words)


def continuations(engine: Engine, bundle: Path, prompts: list[str], variants: int,
                  bias: dict[str, float]) -> list[str]:
    model = engine.load(bundle, device="cpu")
    settings = DecodeConfig(top_p=TOP_P.writer_start, pos_top_k=POS_TOP_K.writer_start,
                            real_words=REAL_WORDS.writer_start, pos_bias=bias, max_new_tokens=60)
    texts = []
    for number, prompt in enumerate(prompts):
        request = GenerationRequest(prompt=prompt, n=variants, decode=settings.with_seed(number * variants))
        texts += [v.text for v in model.generate(request)]
    return texts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", type=Path, default=RESOURCES_MODELS / "continue-posg-nmst")
    parser.add_argument("--data-root", type=Path, default=default_data_root())
    parser.add_argument("--prompts", type=int, default=40)
    parser.add_argument("--variants", type=int, default=3)
    parser.add_argument("--group", default="adjectives")
    parser.add_argument("--factor", type=float, default=10.0)
    args = parser.parse_args(argv)
    prompts = held_out_prompts(args.data_root, args.prompts)
    engine = Engine(search_dirs=[])
    rows = {name: adjective_share(continuations(engine, args.bundle, prompts, args.variants, bias))
            for name, bias in (("plain", {}), (f"{args.group} x{args.factor:g}", {args.group: args.factor}))}
    print(f"bundle {args.bundle} · {len(prompts)} held-out prompts × {args.variants} variants", file=sys.stderr)
    print(f"{'decoding':<20} {'adjective share':>16} {'adjectives/sentence':>20}")
    for name, (share, per_sentence) in rows.items():
        print(f"{name:<20} {share:>16.4f} {per_sentence:>20.3f}")
    (plain_share, plain_sentence), (biased_share, biased_sentence) = rows.values()
    print(f"{'ratio':<20} {biased_share / max(plain_share, 1e-9):>16.2f} "
          f"{biased_sentence / max(plain_sentence, 1e-9):>20.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
