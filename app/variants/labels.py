"""Class label of every span of a variant for the chosen colour mode ("tag · group" for POS)."""

from __future__ import annotations

from collections.abc import Callable

from app.variants.colouring import frequency_classes, span_tags
from app.variants.state import VariantState
from engine.front_door import LoadedModel, coarse_pos_group

Tagger = Callable[[list[str]], list[list[tuple[int, int, str]]]]


class LabelSource:
    """Labels for one loaded model; caches the frequency classes and group names."""

    def __init__(self, model: LoadedModel) -> None:
        self.model = model
        self.group_names = model.group_names()
        self._classes: list[str] | None = None
        self.pos_head = model.capabilities.pos_guided  # groups are PTB tags

    @property
    def classes(self) -> list[str]:
        if self._classes is None:
            self._classes = frequency_classes(self.model.token_counts())
        return self._classes

    def needs_tagger(self, mode: str) -> bool:
        return mode == "pos" and not self.pos_head

    def labels(self, mode: str, state: VariantState, tagged: list[tuple[int, int, str]] | None = None) -> list[str]:
        """Per-span labels; for POS without a POS head, `tagged` are the tagger's words of state.text."""
        spans = state.spans
        if mode == "frequency":
            classes = self.classes
            return [classes[s.token_ids[-1]] if s.token_ids[-1] < len(classes) else "" for s in spans]
        if mode == "group":
            return [self._group(s.group) for s in spans]
        if mode == "pos":
            tags = [self._group(s.group) for s in spans] if self.pos_head else span_tags(spans, tagged or [])
            return [f"{tag} · {coarse_pos_group(tag)}" if tag else "" for tag in tags]
        return []

    def _group(self, group: int) -> str:
        return self.group_names[group] if 0 <= group < len(self.group_names) else f"group {group}"
