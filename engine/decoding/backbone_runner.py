"""The backbone runner seam: what the decoder needs from whatever computes hidden states.

`LanguageModel` is the torch runner; `engine.onnx.runner.OnnxBackboneRunner` runs the exported
decoder step on ONNX Runtime. A runner makes an empty cache for N rows and turns ids [N, T] that
follow the cache's positions into hidden states [N, T, D], growing the cache; the head, the
processors and the sampler stay the decoder's own, whichever runner computes the states.
"""

from __future__ import annotations

from typing import Protocol, TypeVar

import torch


class StepCache(Protocol):
    """A decoding cache: `length` positions filled (set to 0 to re-encode a window), room for `capacity`."""

    length: int

    @property
    def capacity(self) -> int: ...

    def select_rows(self, rows: torch.Tensor) -> None: ...


Cache = TypeVar("Cache", bound=StepCache)


class BackboneRunner(Protocol[Cache]):
    """`new_cache(n)` and `decode(ids [N, T], cache) -> hidden [N, T, D]` (see the module docstring)."""

    def new_cache(self, rows: int, positions: int | None = None) -> Cache:
        """An empty cache for `rows` rows with room for `positions` positions (at most, and by default, a block)."""

    def decode(self, input_ids: torch.Tensor, cache: Cache) -> torch.Tensor: ...
