"""A sentence-by-sentence variant (story, abstract, paraphrase) shown as the text Insert will put in.

The engine streams such a variant in the order it writes its sentences, as model text ("she did n't
go ."), each token naming its sentence (`TokenEvent.sentence`). A pane shows the sentences in reading
order, cased and detokenized exactly as the engine's final text (`display_paragraph`), while they
grow. Each token's characters are then found again in that text: detokenizing only changes spaces,
case and `` / '' quotes, so the non-space characters line up one to one, and colours and hover tips
land on the right words.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from app.variants.spans import TokenSpan
from engine.data.text import display_paragraph


@dataclass
class ModelSentence:
    """One sentence as the model wrote it: its text and its tokens' spans in that text."""

    text: str = ""
    spans: list[TokenSpan] = field(default_factory=list)


def lay_out(sentences: dict[int, ModelSentence]) -> tuple[str, list[TokenSpan]]:
    """The display text of the sentences in reading order, and their tokens' spans in it."""
    ordered = [sentences[t] for t in sorted(sentences)]
    text = display_paragraph([s.text.strip() for s in ordered])
    return text, align(ordered, text)


def align(sentences: list[ModelSentence], text: str) -> list[TokenSpan]:
    """Each token span of `sentences` moved onto `text`; spans after the first mismatch are left out."""
    spans: list[TokenSpan] = []
    position = 0
    for sentence in sentences:
        for span in sentence.spans:
            found = find_piece(sentence.text[span.start : span.end], text, position)
            if found is None:
                return spans
            if found[0] < found[1]:
                spans.append(TokenSpan(found[0], found[1], span.token_ids, span.log_prob, span.group))
            position = found[1]
    return spans


def find_piece(piece: str, text: str, position: int) -> tuple[int, int] | None:
    """Where `piece`'s non-space characters sit in `text` from `position` on, matched case-blind
    (start == end for a piece of spaces only); None when they do not match."""
    start: int | None = None
    end = position
    for char in piece.replace("``", '"').replace("''", '"'):
        if char.isspace():
            continue
        while end < len(text) and text[end].isspace():
            end += 1
        if end >= len(text) or text[end].lower() != char.lower():
            return None
        start = end if start is None else start
        end += 1
    return (position, position) if start is None else (start, end)
