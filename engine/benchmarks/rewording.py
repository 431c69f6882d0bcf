"""How often a language model finds rewordings of held-out story sentences, and what they read like.

The sentences of held-out ROCStories stories (the hash split every Continue model held out), one
request each, as the app paraphrases a one-sentence selection (`Engine.load(...).stream`, task
"paraphrase", N variants, a fixed seed): the table gives the share of sentences with 0, 1, …, N
distinct rewrites, the mean, and the share of the source's content words each rewrite keeps (on
normalised words, engine/metrics/paraphrase.py) and the time a sentence takes (parsers loaded first;
measure with nothing else running); then `--show` sentences with their rewrites, to read.

    python -m engine.benchmarks.rewording [--bundle resources/models/continue-f2-nmst] [--sentences 300]
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from pathlib import Path

from engine.data.corpus import read_corpus, split_documents
from engine.data.text import normalize
from engine.decoding import DecodeConfig
from engine.evaluation.splits import default_data_root
from engine.front_door import RESOURCES_MODELS, Engine, GenerationRequest
from engine.metrics.paraphrase import content_words_kept
from engine.paraphrase.passage import split_passage

STORY_FILES = ("rocstories/diffusion_lm/roc_valid.json",
               "rocstories/story_cloze_2016/cloze_test_val__spring2016-cloze_test_ALL_val.tsv",
               "rocstories/story_cloze_2016/cloze_test_test__spring2016-cloze_test_ALL_test.tsv")


def held_out_sentences(data_root: Path, count: int) -> list[str]:
    """The first `count` sentences of the held-out stories (hash split, fraction 0.05), in order."""
    _, held_out = split_documents(read_corpus([data_root / name for name in STORY_FILES]), 0.05)
    return [story[a:b] for story in held_out for a, b in split_passage(story)][:count]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", type=Path, default=RESOURCES_MODELS / "continue-f2-nmst")
    parser.add_argument("--data-root", type=Path, default=None, help="default: ../shared/data")
    parser.add_argument("--sentences", type=int, default=300)
    parser.add_argument("--variants", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--show", type=int, default=15, help="sentences printed with their rewrites")
    args = parser.parse_args(argv)
    model = Engine().load(args.bundle, device="cpu", runtime="torch")
    sentences = held_out_sentences(args.data_root or default_data_root(), args.sentences)
    counts: Counter[int] = Counter()
    kept: list[float] = []
    shown: list[tuple[str, list[str]]] = []
    model.generate(GenerationRequest(task="paraphrase", prompt="It was late.", n=1))  # loads spaCy and WordNet
    started = time.perf_counter()
    for i, sentence in enumerate(sentences):
        request = GenerationRequest(task="paraphrase", prompt=sentence, n=args.variants,
                                    decode=DecodeConfig(seed=args.seed + i))
        rewrites = sorted({v.text for v in model.generate(request)} - {sentence})
        counts[len(rewrites)] += 1
        kept += [content_words_kept([normalize(r)], [normalize(sentence)]) for r in rewrites]
        if len(shown) < args.show:
            shown.append((sentence, rewrites))
    seconds = time.perf_counter() - started
    total = len(sentences)
    print(f"{total} held-out story sentences, {args.variants} variants each, {args.bundle.name}, "
          f"{1000 * seconds / total:.0f} ms a sentence on the {model.device} (torch):")
    for k in range(args.variants + 1):
        print(f"  {k} distinct rewrites: {100 * counts[k] / total:5.1f}% of sentences")
    print(f"  mean distinct rewrites: {sum(k * c for k, c in counts.items()) / total:.2f} of {args.variants}")
    print(f"  content words kept by a rewrite: {100 * sum(kept) / max(len(kept), 1):.1f}%")
    for sentence, rewrites in shown:
        print(f"\n{sentence}\n" + "".join(f"  → {r}\n" for r in rewrites), end="")


if __name__ == "__main__":
    main()
