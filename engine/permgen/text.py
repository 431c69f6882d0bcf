"""PermGen's encoder input for stories and abstracts: the title and keywords in one fixed, normalised form."""

from __future__ import annotations

from collections.abc import Sequence

from engine.data.text import normalize


def format_source(title: str, keywords: Sequence[str], lowercase: bool = True) -> str:
    """The encoder input: title and keywords, normalised, in one fixed form."""
    words = " , ".join(normalize(k, lowercase) for k in keywords if k.strip())
    return f"title : {normalize(title, lowercase)} keywords : {words}"
