"""How long a writer waits for Paraphrase: N rewrites of one 25-word sentence, through the app's path, side by side.

    python -m engine.benchmarks.paraphrase_time --bundles B [B ...] [--candidates 3] [--rounds 5] [--guidance G ...]
        [--drafts K ...] [--floor-rounds R ...]

Each bundle is loaded as the app loads it (torch on the CPU) and asked at the settings a writer starts at on it,
with the drafts the app sends: the writer's "Drafts to choose from" where the model's meaning floor chooses among
drafts (a paraphrase model on the pretrained base), else one per rewrite. With several `--drafts` counts,
`--guidance` strengths (a PermGen paraphrase model's "Stay on topic", docs/guidance.md) or `--floor-rounds` (the
rounds of drafts a meaning floor may write), each bundle is timed at each; a model that takes no drafts or has no
floor, once. Rounds alternate between the cases after one warm-up each (round r with seed r), so a busy moment
hits every bundle; the median seconds per request and the median tokens written are printed, with one round's
rewrites to read. Measure with nothing else running: two cores are easily contended.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time
from pathlib import Path

import torch

from engine.benchmarks.alternating import Timer, alternating_runs
from engine.benchmarks.selection import writer_start
from engine.decode_fields import GUIDANCE, MAX_NEW_TOKENS
from engine.front_door import Engine, GenerationRequest, LoadedModel

SENTENCE = ("The bridge over the river was closed for repairs last spring, so the farmers had to drive twenty "
            "miles to reach the market in town.")  # 25 words


def timer(model: LoadedModel, n: int, texts: dict[int, list[str]], guidance: float = GUIDANCE.off,
          drafts: int | None = None, floor_rounds: int | None = None) -> Timer:
    """seed → (seconds, tokens) of one request for `n` rewrites of SENTENCE at `guidance` with `drafts` (None: the
    app's) and, for a model with a meaning floor, at most `floor_rounds` rounds of drafts (None: the app's); the
    rewrites go to `texts[seed]`."""
    app_rounds = getattr(model, "floor_rounds", None)

    def run(seed: int) -> tuple[float, int]:
        if app_rounds is not None:  # one loaded model serves every case: set its rounds for this one
            model.floor_rounds = app_rounds if floor_rounds is None else floor_rounds  # type: ignore[attr-defined]
        settings = writer_start(model, MAX_NEW_TOKENS.writer_start, seed)
        asked = settings.drafts if drafts is None else drafts
        settings = settings.replace(drafts=model.capabilities.drafts_for("paraphrase", asked))
        settings = settings if guidance == GUIDANCE.off else settings.replace(guidance=guidance)
        request = GenerationRequest(task="paraphrase", prompt=SENTENCE, n=n, decode=settings)
        start = time.perf_counter()
        variants = model.generate(request)
        seconds = time.perf_counter() - start
        texts[seed] = [v.text.strip() for v in variants]
        return seconds, sum(len(v.token_ids) for v in variants)

    return run


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundles", type=Path, nargs="+", required=True)
    parser.add_argument("--candidates", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--guidance", type=float, nargs="+", default=[GUIDANCE.off], help="γ, 1 = off")
    parser.add_argument("--drafts", type=int, nargs="+", default=[None], help="drafts per rewrite (default: the app's)")
    parser.add_argument("--floor-rounds", type=int, nargs="+", default=[None],
                        help="rounds of drafts at most, for a model with a meaning floor (default: the app's)")
    args = parser.parse_args(argv)
    engine = Engine()
    models = [engine.load(bundle, device="cpu", runtime="torch") for bundle in args.bundles]
    # a model that takes no drafts (or has no floor), once
    cases: dict[tuple[str, LoadedModel, float, int | None, int | None], None] = {}
    for bundle, model in zip(args.bundles, models, strict=True):
        for g, asked, asked_rounds in itertools.product(args.guidance, args.drafts, args.floor_rounds):
            k = None if asked is None else model.capabilities.drafts_for("paraphrase", asked)
            r = asked_rounds if hasattr(model, "floor_rounds") else None
            name = (f"{bundle}" + (f" γ {g:g}" if len(args.guidance) > 1 else "") + (f" · {k} drafts" if k else "")
                    + (f" · {r} rounds at most" if r else ""))
            cases[name, model, g, k, r] = None
    texts: list[dict[int, list[str]]] = [{} for _ in cases]
    runs = alternating_runs([timer(model, args.candidates, written, g, k, r)
                             for (_, model, g, k, r), written in zip(cases, texts, strict=True)], args.rounds)
    print(f"{args.candidates} rewrites of a 25-word sentence · cpu · {torch.get_num_threads()} threads · "
          f"median of {args.rounds} alternating rounds")
    print(f"{'bundle':<64} {'seconds':>8} {'tokens':>7}")
    for (name, *_), timed in zip(cases, runs, strict=True):
        print(f"{name:<64} {statistics.median(s for s, _ in timed):8.2f} {statistics.median(t for _, t in timed):7.0f}")
    print(f"\n{SENTENCE}")
    for (name, *_), written in zip(cases, texts, strict=True):
        print(f"\n{name} (seed 1):\n" + "".join(f"  {text}\n" for text in written[min(1, args.rounds - 1)]))


if __name__ == "__main__":
    main()
