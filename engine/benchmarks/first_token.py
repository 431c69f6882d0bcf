"""Load time, first token after a long prompt, and memory of one bundle, as a writer's first Generate meets them.

    python -m engine.benchmarks.first_token --bundle B [--words 100] [--runs 3]

Loads the bundle on the CPU (a bundle on the pretrained base dequantizes its GGUF), then times the first streamed
token of one variant after a prompt of about `--words` words, `--runs` times; prints the process's resident memory
after, and its peak (Linux `/proc`, `getrusage`).
"""

from __future__ import annotations

import argparse
import resource
import time
from pathlib import Path

from engine.front_door import DecodeConfig, Engine, GenerationRequest

SENTENCE = "Jenny wanted to learn to bake bread, so she asked her grandmother for help one sunny day."


def resident_gib() -> float:
    """The process's resident memory now (Linux), in GiB."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * resource.getpagesize() / 2**30


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", type=Path, required=True)
    parser.add_argument("--words", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    model = Engine().load(args.bundle, device="cpu", runtime="torch")
    loaded = time.perf_counter() - start
    prompt = " ".join([SENTENCE] * max(1, round(args.words / len(SENTENCE.split()))))
    firsts = []
    for _ in range(args.runs):
        start = time.perf_counter()
        stream = model.stream(GenerationRequest(prompt=prompt, n=1, decode=DecodeConfig(seed=1, max_new_tokens=20)))
        for index, _ in enumerate(stream):
            if index == 0:
                firsts.append(time.perf_counter() - start)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux
    print(f"{args.bundle}: loaded in {loaded:.1f} s; first token after a {len(prompt.split())}-word prompt "
          f"{', '.join(f'{s:.2f}' for s in firsts)} s; resident {resident_gib():.2f} GiB, peak {peak:.2f} GiB")


if __name__ == "__main__":
    main()
