"""Stories, abstracts or paraphrases of held-out inputs, for reading: a model's text beside the human one.

    python -m engine.benchmarks.held_out_paragraphs --bundle B [--count 20] [--candidates 1] [--seed 1] [flags]

The inputs are the evaluation split of the bundle's task (`variorum eval`'s: held-out Plan-and-Write titles and
keywords for a story, AGENDA test titles for an abstract, the TurkCorpus test sentences for a paraphrase),
decoded through the app's own path with the settings a writer starts at on the bundle (the flags of `variorum
generate` change them). Each source's candidates use seeds seed + i·K … as `variorum eval` does. Nothing is
scored: this is what a person reads before quoting a model in its card.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from engine.cli.generate_flags import decode_from_flags, model_starts, unset_fields
from engine.cli_args import add_decode_flags
from engine.evaluation.splits import DEFAULT_FRACTION, load_split
from engine.front_door import Engine, GenerationRequest
from engine.loaded_model import LoadedModel

TASK_SPLITS = {"story": "rocstories_story", "abstract": "agenda_abstract", "paraphrase": "turkcorpus"}


def written(model: LoadedModel, request: GenerationRequest) -> list[str]:
    """The texts of the request's variants, as the app shows them."""
    stream = model.stream(request)
    for _ in stream:
        pass
    return [variant.text.strip() for variant in stream.variants]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", type=Path, required=True)
    parser.add_argument("--count", type=int, default=20, help="held-out inputs")
    parser.add_argument("--candidates", type=int, default=1, help="variants per input")
    parser.add_argument("--data-root", type=Path, default=None)
    parser.add_argument("--split-fraction", type=float, default=DEFAULT_FRACTION, help="as variorum eval's")
    add_decode_flags(parser)
    args = parser.parse_args(argv)
    model = Engine().load(args.bundle, device="cpu")
    task = model.capabilities.tasks[0]
    split = load_split(TASK_SPLITS[task], args.data_root, args.split_fraction)
    decode = decode_from_flags(args)
    decode = decode.replace(**model_starts(unset_fields(args), model.capabilities, decode.flat_sampling))
    decode = decode.replace(drafts=model.capabilities.drafts_for(task, decode.drafts))  # as the app sends
    k, seed = args.candidates, decode.seed or 0
    print(f"{args.bundle} · {task} · {args.count} held-out inputs of {split.name} · {decode.active_fields()}")
    if task == "paraphrase":
        for i, (source, reference) in enumerate(split.pairs[: args.count]):
            request = GenerationRequest(task=task, prompt=source, n=k, decode=decode.with_seed(seed + i * k))
            texts = written(model, request)
            print(f"\n[{i + 1}] {source}\n" + "".join(f"  model: {t}\n" for t in texts) + f"  human: {reference}")
        return
    for i, example in enumerate(split.examples[: args.count]):
        request = GenerationRequest(task=task, title=example.title, keywords=list(example.keywords), n=k,
                                    decode=decode.with_seed(seed + i * k))
        texts = written(model, request)
        print(f"\n[{i + 1}] {example.title} · {', '.join(example.keywords)}\n"
              + "".join(f"  model: {t}\n" for t in texts) + f"  human: {' '.join(example.sentences)}")


if __name__ == "__main__":
    main()
