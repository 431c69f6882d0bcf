"""Every generation batch, kept per document with its settings, so a past batch can be restored."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from app.variants.state import VariantState

MAX_BATCHES = 100


@dataclass
class Batch:
    """One Generate press: mode, request inputs, decode settings and the variants it produced."""

    mode: str
    summary: str  # e.g. the prompt's last words, for the history list
    settings: dict[str, Any]
    variants: list[VariantState] = field(default_factory=list)
    created: float = field(default_factory=time.time)

    def label(self) -> str:
        when = time.strftime("%H:%M:%S", time.localtime(self.created))
        return f"{when} · {self.mode} · {len(self.variants)} variants · {self.summary}"


class History:
    """Batches of one document, oldest first (bounded)."""

    def __init__(self) -> None:
        self.batches: list[Batch] = []

    def add(self, batch: Batch) -> None:
        self.batches.append(batch)
        del self.batches[:-MAX_BATCHES]

    def __len__(self) -> int:
        return len(self.batches)
