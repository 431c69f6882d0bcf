"""Shared pieces of the fuzz suite (tests/engine/test_fuzz.py): the value pools it draws from, the
tiny models it decodes with, and the tally of tried / handled / failed inputs it prints at the end.

"Handled" means the input either worked (and the result was checked) or was refused with the
error type the boundary promises (ValueError / BundleError / CorpusError) and a message naming
what is wrong. Anything else (a TypeError, a torch RuntimeError, a failed check) is "failed".
"""

from __future__ import annotations

import functools
import math
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import torch
from hypothesis import strategies as st

from engine.bundles.bundle import save_bundle
from engine.model import LanguageModel
from engine.permgen.data import tokenizer_texts
from engine.permgen.model import PermGenModel
from engine.permgen.readers import read_examples
from engine.tokenizer import VariorumTokenizer
from tests.conftest import story_lines, tiny_config
from tests.engine.heads.f2_support import build_f2_model
from tests.engine.permgen.conftest import STORIES as PERMGEN_STORIES
from tests.engine.permgen.conftest import tiny_permgen_config

TALLY: Counter[str] = Counter()  # "tried", "handled", "failed", plus per-target "<target>:<outcome>"

# Numbers an adversary tries: edges, underflow and overflow in float32 and float64, signs, non-finite.
EXTREME_FLOATS = [0.0, -0.0, -1.0, 1e-300, 1e-39, 1e-7, 1e-6, 0.01, 0.5, 1.0, 1.5, 2.0, 10.0, 100.0, 1e4,
                  1e39, 1e308, math.inf, -math.inf, math.nan]
EXTREME_INTS = [0, 1, -1, 2, 8, 9, 100, 4096, 4097, 2**31, 2**63, -(2**63), 10**20]
WRONG_TYPES = [None, True, False, "1", "", [1], {"a": 1}, 1.5, 4.0]


def floats() -> st.SearchStrategy[object]:
    return st.one_of(st.sampled_from(EXTREME_FLOATS), st.floats(allow_nan=True, allow_infinity=True),
                     st.sampled_from(WRONG_TYPES))


def ints() -> st.SearchStrategy[object]:
    return st.one_of(st.sampled_from(EXTREME_INTS), st.integers(-10, 300), st.sampled_from(WRONG_TYPES))


def record(target: str, action: Callable[[], object], refused_cleanly: Callable[[Exception], bool]) -> None:
    """Run one fuzz input and tally it; re-raise anything not handled so hypothesis reports it."""
    TALLY["tried"] += 1
    try:
        action()
    except Exception as error:
        if not refused_cleanly(error):
            TALLY["failed"] += 1
            TALLY[f"{target}:failed"] += 1
            raise
    TALLY["handled"] += 1
    TALLY[f"{target}:handled"] += 1


def names_one_of(error: Exception, names: list[str]) -> bool:
    return any(name in str(error) for name in names)


@functools.cache
def tokenizer() -> VariorumTokenizer:
    return VariorumTokenizer.train(story_lines(), vocab_size=320)


@functools.cache
def models() -> tuple[LanguageModel, LanguageModel]:
    """A tiny softmax model and a tiny F² model (fitted classes), untrained."""
    torch.manual_seed(0)
    return LanguageModel(tiny_config(tokenizer().vocab_size)).eval(), build_f2_model(tokenizer())


@functools.cache
def saved_bundles() -> dict[str, Path]:
    """A tiny LM bundle and a tiny PermGen bundle, written once per session to a temporary folder."""
    root = Path(tempfile.mkdtemp(prefix="variorum-fuzz-"))
    save_bundle(root / "lm", models()[0], tokenizer(), "# fuzz\n")
    pg_tokenizer = VariorumTokenizer.train(tokenizer_texts(read_examples(PERMGEN_STORIES)), vocab_size=330)
    torch.manual_seed(0)
    model = PermGenModel(tiny_permgen_config(pg_tokenizer.vocab_size))
    save_bundle(root / "permgen", model, pg_tokenizer, "# fuzz\n")
    return {"lm": root / "lm", "permgen": root / "permgen"}


@contextmanager
def bundle_copy(kind: str) -> Iterator[Path]:
    """A throwaway copy of a saved bundle, to break."""
    with tempfile.TemporaryDirectory() as folder:
        target = Path(folder) / "bundle"
        shutil.copytree(saved_bundles()[kind], target)
        yield target


@pytest.fixture(scope="module", autouse=True)
def print_tally(request: pytest.FixtureRequest) -> Iterator[None]:
    TALLY.clear()
    yield
    reporter = request.config.pluginmanager.getplugin("terminalreporter")
    line = f"fuzz: tried {TALLY['tried']}, handled {TALLY['handled']}, failed {TALLY['failed']}"
    targets = sorted({key.split(":")[0] for key in TALLY if ":" in key})
    detail = ", ".join(f"{t} {TALLY[t + ':handled']}/{TALLY[t + ':handled'] + TALLY[t + ':failed']}" for t in targets)
    capture = request.config.pluginmanager.getplugin("capturemanager")
    if reporter is not None and capture is not None:
        with capture.global_and_fixture_disabled():  # shown even without -s
            reporter.write_line(f"\n{line} ({detail})")
