"""Why a paraphrase model's drafts do not reach the writer: every raw draft judged by the meaning floor, side by side.

    python -m engine.benchmarks.floor_refusals --bundles B [B ...] [--count 60] [--drafts 3] [--temperature 0.7]
        [--top-p 0.9] [--guidance 1] [--seed 1]

For the first `--count` TurkCorpus test sentences, each bundle (a PermGen paraphrase model on the pretrained base)
writes `--drafts` drafts of each sentence through the app's `ParaphraseStream` with no meaning floor, at the
writer's starting settings with the given temperature, top-p and guidance, seed `--seed` + i·drafts for sentence
i as `variorum eval` seeds it. Each draft is then judged by the floor a writer's paraphrase passes
(engine/permgen/meaning_floor.py `MeaningFloor.refusal`): kept, or refused as a copy, for a new name, for content
added or for content lost (the first that applies). The shares of all drafts are printed per bundle, with the
first sentences' drafts and their verdicts to read. It says what the floor turns away, not how a writer's
alternatives read: those are `variorum eval --split turkcorpus` (through the floor, with rewordings filling in).
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from engine.benchmarks.selection import writer_start
from engine.decode_fields import GUIDANCE, MAX_NEW_TOKENS
from engine.evaluation.splits import load_split
from engine.front_door import Engine, GenerationRequest
from engine.permgen.loaded import PermGenLoadedModel
from engine.permgen.meaning_floor import REFUSALS, MeaningFloor
from engine.permgen.paraphrase import ParaphraseStream

KEPT = "kept"


def drafts_judged(model: PermGenLoadedModel, sentence: str, n: int, seed: int,
                  args: argparse.Namespace) -> list[tuple[str, str]]:
    """(draft, verdict) for `n` raw drafts of `sentence`: KEPT or the floor's refusal."""
    settings = writer_start(model, MAX_NEW_TOKENS.writer_start, seed).replace(
        temperature=args.temperature, top_p=args.top_p, guidance=args.guidance)
    request = GenerationRequest(task="paraphrase", prompt=sentence, n=n, decode=settings)
    bundle = model.permgen
    stream = ParaphraseStream(bundle.model, bundle.tokenizer, sentence, n, settings, runner=model.runner,
                              words=model.speller(request), prose=model.prose,
                              unconditioned_ids=model.twin_source(request))
    for _ in stream:
        pass
    floor = MeaningFloor(lowercase=bundle.model.config.lowercase)
    drafts = [" ".join(texts) for texts in zip(*stream.outputs, strict=True)]  # a passage's sentences, per draft
    source = " ".join(stream.sources)
    return [(draft, floor.refusal(source, draft) or KEPT) for draft in drafts]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundles", type=Path, nargs="+", required=True)
    parser.add_argument("--count", type=int, default=60, help="TurkCorpus test sentences, from the first")
    parser.add_argument("--drafts", type=int, default=3, help="drafts of each sentence")
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument("--top-p", type=float, default=0.9)
    parser.add_argument("--guidance", type=float, default=GUIDANCE.off, help="γ, 1 = off")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--show", type=int, default=3, help="sentences whose drafts are printed")
    args = parser.parse_args(argv)
    sentences = [source for source, _ in load_split("turkcorpus").pairs[: args.count]]
    engine = Engine()
    for path in args.bundles:
        model = engine.load(path, device="cpu", runtime="torch")
        if not isinstance(model, PermGenLoadedModel) or model.prose is None:
            raise SystemExit(f"{path}: not a PermGen paraphrase model on the pretrained base (no meaning floor)")
        judged = [drafts_judged(model, s, args.drafts, args.seed + i * args.drafts, args)
                  for i, s in enumerate(sentences)]
        counts = Counter(verdict for drafts in judged for _, verdict in drafts)
        total = sum(counts.values())
        print(f"\n{path}: {total} drafts of {len(sentences)} sentences · temperature {args.temperature:g}, "
              f"top-p {args.top_p:g}, guidance {args.guidance:g}")
        for verdict in (KEPT, *REFUSALS):
            print(f"  {verdict:<14} {100 * counts[verdict] / total:5.1f}%")
        for sentence, drafts in list(zip(sentences, judged, strict=True))[: args.show]:
            print(f"\n  {sentence}\n" + "".join(f"    [{verdict}] {draft}\n" for draft, verdict in drafts))


if __name__ == "__main__":
    main()
