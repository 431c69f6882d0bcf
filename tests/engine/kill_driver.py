"""Run `variorum train` and SIGKILL it at a chosen file operation, as `kill -9` would at that moment.

Usage: python -m tests.engine.kill_driver WHEN TRAIN_ARGS...

Every file operation the run makes from Python counts: opening a file for writing (twice: before
the open, and just after it, when the file is already created or truncated), rename/replace, unlink,
mkdir, rmdir, rmtree, chmod, fsync, mkstemp/mkdtemp. WHEN is `N` (the N-th operation), `TEXT:K`
(the K-th operation whose description, e.g. "opened /x/tokenizer/token_counts.json", contains TEXT)
or `count` (never kill; print the number of operations at the end).
"""

from __future__ import annotations

import builtins
import io
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Callable
from typing import Any

WRITE_MODES = set("wax+")
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


class Injector:
    """Counts file operations and kills this process at the chosen one."""

    def __init__(self, when: str) -> None:
        text, _, nth = when.rpartition(":")
        self.counting = when == "count"
        self.text, self.nth = (text, int(nth)) if text else ("", 0 if self.counting else int(when))
        self.seen = 0

    def step(self, description: str) -> None:
        if self.text not in description:
            return
        self.seen += 1
        if self.seen == self.nth:
            os.kill(os.getpid(), signal.SIGKILL)

    def wrap(self, kind: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def operation(*args: Any, **kwargs: Any) -> Any:
            self.step(f"{kind} {args[0] if args else ''}")
            return real(*args, **kwargs)
        return operation

    def wrap_open(self, real: Callable[..., Any], writes: Callable[..., bool]) -> Callable[..., Any]:
        def opener(*args: Any, **kwargs: Any) -> Any:
            if not writes(*args, **kwargs):
                return real(*args, **kwargs)
            self.step(f"open {args[0]}")
            result = real(*args, **kwargs)
            self.step(f"opened {args[0]}")
            return result
        return opener

    def install(self) -> None:
        for name in ("replace", "rename", "unlink", "mkdir", "rmdir", "chmod", "fsync"):
            setattr(os, name, self.wrap(name, getattr(os, name)))
        shutil.rmtree = self.wrap("rmtree", shutil.rmtree)  # type: ignore[assignment]
        tempfile.mkstemp = self.wrap("mkstemp", tempfile.mkstemp)
        tempfile.mkdtemp = self.wrap("mkdtemp", tempfile.mkdtemp)
        file_open = self.wrap_open(io.open, lambda file, mode="r", *a, **k: bool(WRITE_MODES & set(mode)))
        builtins.open = io.open = file_open
        os.open = self.wrap_open(os.open, lambda path, flags, *a, **k: bool(flags & WRITE_FLAGS))


def main() -> int:
    injector = Injector(sys.argv[1])
    injector.install()
    from engine.lm.train import main as train_main

    code = train_main(sys.argv[2:])
    if injector.counting:
        print(f"OPERATIONS {injector.seen}")
    return code


if __name__ == "__main__":
    sys.exit(main())
