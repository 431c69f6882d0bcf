"""Continuations of held-out story openings, for reading: a model's text beside the writer's own ending.

    python -m engine.benchmarks.held_out_continuations --bundle B [--stories 20] [--seed 1] [decode flags]

Each story the bundle held out of its training (the hash split of the three cased ROCStories files, as
`variorum perplexity` reads them) gives its first four sentences as the prompt; the bundle writes one variant
with the settings a writer starts at on it (the flags of `variorum generate` change them), and the story's own
fifth sentence is printed beside it. Nothing is scored: this is what a person reads before quoting a model.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from engine.benchmarks.head_compare import default_train_files
from engine.bundles.bundle import load_bundle
from engine.cli.generate_flags import decode_from_flags, model_starts, unset_fields
from engine.cli_args import add_decode_flags
from engine.front_door import Engine, GenerationRequest
from engine.perplexity import held_out_documents

SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def opening_and_ending(story: str) -> tuple[str, str] | None:
    """(the first four sentences, the rest) of a five-sentence story; None for another shape."""
    sentences = SENTENCE_END.split(story.strip())
    return (" ".join(sentences[:4]), " ".join(sentences[4:])) if len(sentences) >= 5 else None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", type=Path, required=True)
    parser.add_argument("--files", type=Path, nargs="+", default=[Path(p) for p in default_train_files()])
    parser.add_argument("--stories", type=int, default=20)
    parser.add_argument("--max-new-tokens-cap", type=int, default=80, help="tokens at most per continuation")
    add_decode_flags(parser)
    args = parser.parse_args(argv)
    stories = [pair for story in held_out_documents(load_bundle(args.bundle), args.files)
               if (pair := opening_and_ending(story)) is not None][: args.stories]
    model = Engine().load(args.bundle, device="cpu")
    decode = decode_from_flags(args)
    decode = decode.replace(**model_starts(unset_fields(args), model.capabilities, decode.flat_sampling))
    decode = decode.replace(max_new_tokens=min(decode.max_new_tokens, args.max_new_tokens_cap))
    print(f"{args.bundle} · {len(stories)} held-out openings · {decode.active_fields()}")
    for number, (opening, ending) in enumerate(stories, 1):
        seeded = decode.with_seed((decode.seed or 0) + number)
        stream = model.stream(GenerationRequest(prompt=opening, n=1, decode=seeded))
        for _ in stream:
            pass
        variant = stream.variants[0]
        print(f"\n[{number}] {opening}\n  model ({variant.finish_reason}):{variant.text}\n  human: {ending}")


if __name__ == "__main__":
    main()
