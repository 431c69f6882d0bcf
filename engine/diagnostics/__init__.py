"""Embedding diagnostics (AGG paper): I(W), cosine between frequency groups, PPL / Uniq per group.

`variorum diagnose` (engine/diagnostics/cli.py) runs them on bundles.
"""

from engine.diagnostics.embedding import (
    GROUP_NAMES,
    agg_group_ids,
    embedding_report,
    group_cosine,
    isotropy,
    normalized_singular_values,
    output_embedding,
)
from engine.diagnostics.predictions import group_prediction_stats

__all__ = [
    "GROUP_NAMES",
    "agg_group_ids",
    "embedding_report",
    "group_cosine",
    "group_prediction_stats",
    "isotropy",
    "normalized_singular_values",
    "output_embedding",
]
