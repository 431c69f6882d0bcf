"""Token classes for colouring variants: frequency class, POS tag, or the head's own sampling group.

Frequency classes are the AGG paper's groups as the engine defines them for its reports
(engine/metrics/frequency.py: the top 30% of token types by training count are "frequent", the
next 50% "medium", the rest "rare"); tokens never seen in training are "unseen". POS colouring
uses the model's sampled tag when its head is POS-guided (groups are PTB tags), else the
tagger's tag of the word a token falls in, shown by coarse group.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtGui import QColor

from app.variants.spans import TokenSpan
from engine.metrics.frequency import GROUP_NAMES, agg_group_per_token

COLOUR_MODES = {"none": "No colours", "frequency": "How common", "pos": "Part of speech", "group": "Model's groups"}
COLOUR_MODE_TIPS = {
    "none": "Plain text.",
    "frequency": "Frequency class: the 30% most frequent word pieces in training, the next 50%, the rarest 20%, "
                 "and pieces never seen in training.",
    "pos": "POS tag: the model's own tag on a POS-guided model, else a tagger's (spaCy).",
    "group": "The head's sampling group of each token (F² frequency class, POSG tag).",
}
LEGEND_LIMIT = 12  # more kinds than this would not fit one line; the hover tip names each word's kind
PALETTE = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
           "#9c755f", "#bab0ac", "#86bcb6", "#d37295")
LABEL_TEXT = "#111111"  # the text colour on every coloured background, light or dark theme
FREQUENCY_COLOURS = {"frequent": "#4e79a7", "medium": "#59a14f", "rare": "#f28e2b", "unseen": "#e15759"}


def frequency_classes(counts: Sequence[int]) -> list[str]:
    """Class name of every token id from its training count (rule in the module docstring)."""
    if not any(counts):  # a tokenizer without training counts: nothing to rank
        return ["unseen"] * len(counts)
    groups = agg_group_per_token(counts)
    return [GROUP_NAMES[group] if count > 0 else "unseen" for group, count in zip(groups, counts, strict=True)]


def colour_for(label: str) -> str:
    """A stable colour per class label; for "tag · group" labels the colour follows the coarse group."""
    label = label.rsplit(" · ", 1)[-1]
    if label in FREQUENCY_COLOURS:
        return FREQUENCY_COLOURS[label]
    return PALETTE[sum(map(ord, label)) % len(PALETTE)]


def background_for(label: str) -> str:
    """The background a label's words get: its colour, lightened so dark text stays readable."""
    return QColor(colour_for(label)).lighter(150).name()


def span_tags(spans: Sequence[TokenSpan], words: Sequence[tuple[int, int, str]]) -> list[str]:
    """Tag of each span: the tag of the first word it overlaps ("" when it overlaps none, e.g. spaces)."""
    tags: list[str] = []
    w = 0
    for span in spans:
        while w < len(words) and words[w][1] <= span.start:
            w += 1
        tags.append(words[w][2] if w < len(words) and words[w][0] < span.end else "")
    return tags


def legend_names(labels: Sequence[str]) -> list[str]:
    """The kinds a legend lists for these span labels: coarse groups for "tag · group", in first-seen order."""
    names = dict.fromkeys(label.rsplit(" · ", 1)[-1] for label in labels if label)
    return list(names)[:LEGEND_LIMIT]


def legend_html(labels: Sequence[str]) -> str:
    """A one-line legend: each kind's name on its colour ("" when nothing is coloured)."""
    return " ".join(f'<span style="background:{background_for(name)}; color:{LABEL_TEXT}">&nbsp;{name}&nbsp;</span>'
                    for name in legend_names(labels))
