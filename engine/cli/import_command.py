"""`variorum import`: a pretrained checkpoint from this machine as a Variorum bundle, offline.

    variorum import gpt2                     # a name in the local Hugging Face cache → the user models folder
    variorum import ~/models/my-gpt2 --out runs/my-gpt2
    variorum import facebook/bart-base       # a PermGen story model; `variorum train-permgen --init-from` tunes it
    variorum import --list                   # what the local caches hold, and why a model cannot be imported
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from engine.cli_errors import check_output_dir, reports_user_errors


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="variorum import", description=__doc__.splitlines()[0])
    p.add_argument("checkpoint", nargs="?", help="a checkpoint folder, or a model name in the local Hugging Face cache")
    p.add_argument("--out", type=Path, help="the new bundle's folder (default: a new folder of the user models "
                                             "folder named after the checkpoint: gpt2, then gpt2-2, …)")
    p.add_argument("--list", action="store_true", help="list the models in the local Hugging Face caches")
    return p


def _list() -> int:
    from engine.bundles.imported import gguf_checkpoints, is_importable
    from engine.checkpoints.hf_cache import cache_roots, cached_checkpoints

    found = [*cached_checkpoints(), *((str(path), info) for path, info in gguf_checkpoints())]
    if not found:
        print("no models in the local Hugging Face caches (" + ", ".join(map(str, cache_roots())) + ") nor GGUF "
              "files in llama.cpp's or LM Studio's folders")
    for name, info in found:
        if isinstance(info, str):
            print(f"{name}: not importable: {info}")
        elif is_importable(info):
            print(f"{name}: importable, {info.summary}")
        else:
            print(f"{name}: recognised, not importable yet: {info.summary}")
    return 0


@reports_user_errors("import")
def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if args.list:
        return _list()
    if not args.checkpoint:
        parser.error("name a checkpoint folder or a cached model (or --list)")
    from engine.front_door import Engine

    if args.out is not None:
        check_output_dir("--out", args.out.parent)
    bundle = Engine().import_checkpoint(args.checkpoint, args.out)
    print(f"imported {args.checkpoint} as the bundle {bundle}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
