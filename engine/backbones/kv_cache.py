"""A preallocated key/value cache for incremental decoding of N rows.

Keys and values of every layer live in two tensors allocated once, [L, N, H, T_max, d]; a step
writes its new positions in place at `length` and attention reads the first `length` positions.
Nothing grows by concatenation, so a step costs the same at position 5 and at position 500.
Rows can be reordered (beams) or dropped with `select_rows`.

A captured (CUDA graph) step needs fixed shapes and addresses, so it writes with `write_at` at a
position held in a device tensor and attends to the whole buffer under a mask
(engine/decoding/graphed_step.py). Buffers start zeroed for it: a masked key still enters the
attention product with weight 0, and 0 × NaN from uninitialised memory would be NaN.

A cache is sized to what a request needs (`capacity` = its positions, at most one block), and one that
would not fit in the device's free memory is refused with `CacheTooLargeError` before anything is
allocated: a model with a 65,536-token window would otherwise ask for gigabytes at its first step.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import torch


class CacheTooLargeError(ValueError):
    """A request's key/value cache would not fit in the device's free memory; the message says what to ask instead."""


def free_memory(device: torch.device) -> int | None:
    """Bytes free on `device` now, or None where this platform does not say."""
    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):  # not a POSIX system, or the name is unknown here
        return None


def check_fits(shape: tuple[int, ...], like: torch.Tensor) -> None:
    """`CacheTooLargeError` when keys and values of `shape` would not fit in `like`'s device's free memory."""
    needed = 2 * like.element_size() * int(torch.Size(shape).numel())
    free = free_memory(like.device)
    if free is not None and needed > free:
        _, rows, _, positions, _ = shape
        raise CacheTooLargeError(f"decoding {rows} variant(s) over {positions} positions needs a "
                                 f"{needed / 2**30:.1f} GiB key/value cache, more than the {free / 2**30:.1f} GiB "
                                 f"free on {like.device}; ask for fewer variants or fewer tokens")


@dataclass
class KVCache:
    """keys/values [L, N, H, T_max, d]; positions [0, length) are filled."""

    keys: torch.Tensor
    values: torch.Tensor
    length: int = 0
    weights: list[Any] = field(default_factory=list)  # the backbone's per-block tensors, looked up once per decode

    @classmethod
    def allocate(
        cls, layers: int, rows: int, heads: int, capacity: int, head_dim: int, like: torch.Tensor
    ) -> KVCache:
        """An empty (zeroed) cache for `rows` rows of up to `capacity` positions, on `like`'s device and dtype."""
        shape = (layers, rows, heads, capacity, head_dim)
        check_fits(shape, like)
        return cls(like.new_zeros(shape), like.new_zeros(shape))

    @property
    def capacity(self) -> int:
        return self.keys.shape[3]

    def write(self, layer: int, keys: torch.Tensor, values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Store keys/values [N, H, T, d] of `layer` at `length`; → all keys/values so far [N, H, length + T, d].

        `length` itself moves on in `advance`, once every layer has written its T positions."""
        end = self.length + keys.shape[2]
        if end > self.capacity:
            raise ValueError(f"KV cache holds {self.capacity} positions; {end} needed (re-encode a shorter window)")
        layer_keys, layer_values = self.keys[layer], self.values[layer]  # [N, H, T_max, d]
        layer_keys.narrow(2, self.length, keys.shape[2]).copy_(keys)
        layer_values.narrow(2, self.length, values.shape[2]).copy_(values)
        return layer_keys.narrow(2, 0, end), layer_values.narrow(2, 0, end)

    def write_at(
        self, layer: int, keys: torch.Tensor, values: torch.Tensor, position: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Store one position's keys/values [N, H, 1, d] of `layer` at `position` [1] (a device tensor, so a
        captured step can replay it) → the layer's whole buffers [N, H, T_max, d]; `length` is the caller's."""
        layer_keys, layer_values = self.keys[layer], self.values[layer]  # [N, H, T_max, d]
        layer_keys.index_copy_(2, position, keys)
        layer_values.index_copy_(2, position, values)
        return layer_keys, layer_values

    def advance(self, count: int) -> None:
        self.length += count

    def select_rows(self, rows: torch.Tensor) -> None:
        """Keep rows `rows` [M] (indices on the cache's device, repeats allowed), in that order."""
        self.keys = self.keys.index_select(1, rows)
        self.values = self.values.index_select(1, rows)
