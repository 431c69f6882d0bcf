"""Giving the memory a model load freed back to the operating system.

Loading a bundle on the pretrained base dequantizes its GGUF file: many temporary arrays, freed once the
weights are in place. glibc keeps such freed heap pages in its arenas for later allocations, so the
process's resident memory stays above what it uses (tests/engine/test_process_memory.py shows the effect on
small freed blocks). A writer's laptop needs that memory more than our allocator does.
"""

from __future__ import annotations

import ctypes
import sys


def return_freed_memory() -> None:
    """Ask glibc to return its freed heap pages (`malloc_trim(0)`); nothing where there is no glibc (macOS,
    Windows, musl), which return freed memory by their own rules."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return
    trim = getattr(libc, "malloc_trim", None)
    if trim is not None:
        trim(0)
