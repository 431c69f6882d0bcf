"""What the status line says about a batch: while it is written, its speed and the time left; when it is
done, how long it took. Plain words and whole seconds; the estimate comes from the share of the batch
written so far, so it needs no model-specific figures."""

from __future__ import annotations

from app.variants.state import VariantState
from engine.front_door import GenerationRequest

PLANNED = ("story", "abstract")  # written sentence by sentence, a known number of them
EARLIEST_ESTIMATE = 0.05  # before this share is written, a time left would be a guess


def share_written(request: GenerationRequest, states: list[VariantState]) -> float | None:
    """The share (0–1) of the batch written so far, None when it cannot be told (a paraphrase's sentences are
    the passage's, counted only by the engine). A continuation may end before its length limit, so its share
    is a lower bound; a story's sentence being written counts as half done."""
    if not states:
        return None
    if request.task in PLANNED:
        sentences = max(int(getattr(request, "num_sentences", 0) or 0), 1)
        started = sum(len(s.order) - 0.5 for s in states if s.order)
        return min(started / (sentences * len(states)), 1.0)
    if request.task == "continue":
        limit = max(request.decode.max_new_tokens, 1)
        return min(sum(min(s.tokens, limit) for s in states) / (limit * len(states)), 1.0)
    return None


def duration_words(seconds: float) -> str:
    """3 s, 45 s, 2 min 5 s."""
    whole = max(round(seconds), 0)
    return f"{whole} s" if whole < 60 else f"{whole // 60} min {whole % 60} s"


def writing_words(request: GenerationRequest, states: list[VariantState], tokens: int, elapsed: float) -> str:
    """The line while writing: how many variants, tokens per second, and the time left when it can be told."""
    what = f"Writing {len(states)} variant{'s' if len(states) != 1 else ''}"
    if tokens == 0 or elapsed <= 0:
        return f"{what}: starting…"
    parts = [what, f"{tokens / elapsed:.0f} tokens/s"]
    share = share_written(request, states)
    if share is not None and share >= EARLIEST_ESTIMATE:
        left = elapsed * (1 - share) / share
        # a continuation's share is a lower bound: variants often end before the limit
        parts.append(f"{'up to' if request.task == 'continue' else 'about'} {duration_words(left)} left")
    return " · ".join(parts)


def done_words(stopped: bool, failed: bool, tokens: int, seconds: float, variants: int) -> str:
    """The line a batch leaves behind, kept until the writer's next action."""
    took = duration_words(seconds)
    if failed:
        return f"Could not finish: stopped after {took}."
    head = f"Stopped after {took}" if stopped else f"Done in {took}"
    if tokens == 0:
        return f"{head}: no words were written."
    parts = [head, f"{variants} variant{'s' if variants != 1 else ''}"]
    if seconds > 0:
        parts.append(f"{tokens / seconds:.0f} tokens/s")
    return " · ".join(parts)


def drafting_words(request: GenerationRequest, drafted: int, choosing: bool,
                   elapsed: float) -> tuple[str, float | None]:
    """The line (and the bar's share, None when it cannot be told) while drafts are written, then scored: the
    window shows only the chosen variants, once chosen (engine/selection)."""
    n, drafts = request.n, request.n * request.decode.drafts
    if choosing:
        return f"Choosing the {n} variant{'s' if n != 1 else ''} that make most sense, of {drafts} drafts…", 1.0
    what = f"Writing {drafts} drafts for {n} variant{'s' if n != 1 else ''}"
    if drafted == 0 or elapsed <= 0:
        return f"{what}: starting…", None
    parts = [what, f"{drafted / elapsed:.0f} tokens/s"]
    share = None
    if request.task == "continue":
        share = min(drafted / (max(request.decode.max_new_tokens, 1) * drafts), 1.0)
        if share >= EARLIEST_ESTIMATE:
            parts.append(f"up to {duration_words(elapsed * (1 - share) / share)} left, then choosing")
    return " · ".join(parts), share
