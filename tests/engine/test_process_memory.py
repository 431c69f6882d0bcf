"""Returning freed heap memory after a load: safe everywhere, and on glibc it gives pages back."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from engine import process_memory
from engine.process_memory import return_freed_memory


def resident_kib() -> int:
    status = Path("/proc/self/status").read_text(encoding="ascii")
    return int(next(line for line in status.splitlines() if line.startswith("VmRSS")).split()[1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc and glibc's malloc_trim")
def test_freed_small_allocations_go_back_to_the_system() -> None:
    """Many small blocks come from the heap (not mmap), and stay resident after being freed until trimmed."""
    blocks = [bytearray(4000) for _ in range(60_000)]  # ≈ 240 MB of heap
    for block in blocks:
        block[0] = 1
    del blocks[:-1]  # the last one keeps the heap's top in use, as a loaded model's arrays do
    before = resident_kib()
    return_freed_memory()
    assert resident_kib() < before - 100_000


def test_without_glibc_it_does_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(process_memory.sys, "platform", "darwin")
    return_freed_memory()
    monkeypatch.setattr(process_memory.sys, "platform", "linux")
    monkeypatch.setattr(process_memory.ctypes, "CDLL", lambda name: (_ for _ in ()).throw(OSError(name)))
    return_freed_memory()
