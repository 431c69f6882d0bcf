"""How often a prose abstract or story on the base says a word 4-gram again, under each "said before" run.

    python -m engine.benchmarks.said_before --bundle B [--run 4 3] [--count 8] [--candidates 3] [--data-root D]

A prose story or abstract may not write a run of `SAID_BEFORE_RUN[task]` + 1 tokens twice (engine/permgen/
decode.py). This writes `--candidates` variants of the first `--count` held-out inputs of the task's split
(AGENDA for abstracts, Plan-and-Write for stories) at temperature 0.7 and top-p 0.9, input i with seed i·K, once
under each run asked for, and prints seq-rep-4 (`variorum eval`'s measure: the share of a text's word 4-grams
that repeat an earlier one, averaged over texts) with the 4-grams said again in each text.
"""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from engine.benchmarks.held_out_paragraphs import TASK_SPLITS, written
from engine.data.text import normalize
from engine.decoding.settings import DecodeConfig
from engine.evaluation.splits import load_split
from engine.front_door import Engine, GenerationRequest
from engine.metrics.repetition import seq_rep_n
from engine.permgen import decode


@contextmanager
def said_before_run(task: str, run: int) -> Iterator[None]:
    """Streams of `task` opened inside hold to `run` instead of the shipped one."""
    shipped = decode.SAID_BEFORE_RUN[task]
    decode.SAID_BEFORE_RUN[task] = run
    try:
        yield
    finally:
        decode.SAID_BEFORE_RUN[task] = shipped


def repeated_grams(words: list[str], n: int = 4) -> list[str]:
    """The word n-grams said more than once in `words`."""
    counts = Counter(tuple(words[i:i + n]) for i in range(len(words) - n + 1))
    return [" ".join(gram) for gram, count in counts.items() if count > 1]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", type=Path, required=True)
    parser.add_argument("--run", type=int, nargs="+", default=[4, 3], help="longest run said again, in tokens")
    parser.add_argument("--count", type=int, default=8, help="held-out inputs")
    parser.add_argument("--candidates", type=int, default=3, help="variants per input")
    parser.add_argument("--data-root", type=Path, default=None, help="as variorum eval's")
    parser.add_argument("--max-new-tokens", type=int, default=DecodeConfig.max_new_tokens, help="per sentence")
    args = parser.parse_args(argv)
    model = Engine().load(args.bundle, device="cpu")
    task = model.capabilities.tasks[0]
    if task not in decode.SAID_BEFORE_RUN:
        parser.error(f"{args.bundle} writes {task}s; the rule holds stories and abstracts")
    examples, k = load_split(TASK_SPLITS[task], args.data_root).examples[: args.count], args.candidates
    for run in args.run:
        texts: list[list[str]] = []
        with said_before_run(task, run):
            for i, example in enumerate(examples):
                request = GenerationRequest(task=task, title=example.title, keywords=list(example.keywords), n=k,
                                            decode=DecodeConfig(temperature=0.7, top_p=0.9, seed=i * k,
                                                                       max_new_tokens=args.max_new_tokens))
                texts += [normalize(text, False).split() for text in written(model, request)]
        print(f"run {run}: seq-rep-4 {100 * seq_rep_n(texts, 4):.2f}% over {len(texts)} texts, {k} for each of "
              f"{len(examples)} held-out {task} inputs")
        for i, words in enumerate(texts):
            print(f"  [{i // k + 1}.{i % k + 1}] {repeated_grams(words)}")


if __name__ == "__main__":
    main()
