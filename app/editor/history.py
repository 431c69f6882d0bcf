"""Every generation batch, kept per document with its settings, so a past batch can be restored.

A history turns into plain JSON (`to_json` / `from_json`) so it can live next to the document's
autosave and in the per-file history store (app.persistence.history_store).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from app.controls.modes import MODE_LABELS
from app.variants.state import VariantState

MAX_BATCHES = 100


@dataclass
class Batch:
    """One Generate press: mode, request inputs, decode settings, the model and the variants it produced."""

    mode: str
    summary: str  # e.g. the prompt's last words, for the history list
    settings: dict[str, Any]
    variants: list[VariantState] = field(default_factory=list)
    created: float = field(default_factory=time.time)
    model: str = ""  # the model's folder name ("" in batches kept before models were named)

    def label(self) -> str:
        when = time.strftime("%H:%M:%S", time.localtime(self.created))
        parts = [when, MODE_LABELS.get(self.mode, self.mode), *([self.model] if self.model else []),
                 f"{len(self.variants)} variant{'s' if len(self.variants) != 1 else ''}", self.summary]
        return " · ".join(part for part in parts if part)

    def to_json(self) -> dict[str, Any]:
        return {"mode": self.mode, "summary": self.summary, "settings": self.settings,
                "variants": [v.to_dict() for v in self.variants], "created": self.created, "model": self.model}

    @classmethod
    def from_json(cls, data: Any) -> Batch:
        """Raise ValueError / TypeError / KeyError when `data` is not a batch."""
        if not isinstance(data, dict) or not isinstance(data["settings"], dict):
            raise ValueError("a batch must be an object with settings")
        variants = [VariantState.from_dict(v) for v in data["variants"]]
        if not all(isinstance(v.text, str) for v in variants):
            raise ValueError("a variant's text must be a string")
        return cls(str(data["mode"]), str(data["summary"]), data["settings"], variants, float(data["created"]),
                   str(data.get("model", "")))


class History:
    """Batches of one document, oldest first (bounded)."""

    def __init__(self, batches: list[Batch] | None = None) -> None:
        self.batches: list[Batch] = list(batches or [])[-MAX_BATCHES:]

    def add(self, batch: Batch) -> None:
        self.batches.append(batch)
        del self.batches[:-MAX_BATCHES]

    def __len__(self) -> int:
        return len(self.batches)

    def to_json(self) -> list[dict[str, Any]]:
        return [b.to_json() for b in self.batches]

    @classmethod
    def from_json(cls, data: Any) -> tuple[History, int]:
        """The readable batches of `data` and how many were skipped as unreadable."""
        if data is None:
            return cls(), 0
        if not isinstance(data, list):
            raise ValueError("a history must be a list of batches")
        batches: list[Batch] = []
        for item in data:
            try:
                batches.append(Batch.from_json(item))
            except (ValueError, TypeError, KeyError, AttributeError):
                continue
        return cls(batches), len(data) - len(batches)
