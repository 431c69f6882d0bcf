"""A fake engine for UI-only tests: deterministic words, a per-step delay, and should_stop checked each step."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import torch

from engine.controls import Capabilities, ClassGroups, HeadCapabilities, PosGroups, Termination
from engine.front_door import BundleError, BundleInfo, CheckpointInfo, GenerationRequest, TokenEvent, Variant

WORDS = ["the", " cat", " sat", " on", " a", " warm", " mat", ".", " It", " purred", " softly", "!"]

# What the fake models announce, as the real heads would (tests/engine/heads check the real ones).
SOFTMAX = Capabilities()
F2 = Capabilities(HeadCapabilities("f2", 4, classes=ClassGroups((2, 3, 4, 5))))
POSG = Capabilities(HeadCapabilities("posg", 3, pos=PosGroups(("JJ", "NN", "<special>"), ("adjectives", "nouns"))))
NMST = Capabilities(HeadCapabilities("softmax+nmst", 2, termination=Termination("nmst", 1e-5)))


def writes(*tasks: str) -> Capabilities:
    """A plain softmax model trained for these tasks."""
    return Capabilities(tasks=tasks)


class FakeStream:
    """Yields one token per variant per step, like VariantStream; `variants` is filled as it goes."""

    def __init__(self, request: GenerationRequest, should_stop: Callable[[], bool], step_s: float, length: int,
                 fail_at: int | None) -> None:
        self.request = request
        self.should_stop = should_stop
        self.step_s = step_s
        self.length = min(length, request.decode.max_new_tokens)
        self.fail_at = fail_at
        base = request.decode.seed if request.decode.seed is not None else 7
        self.variants = [Variant(i, base + i, request.decode.with_seed(base + i).to_dict()) for i in range(request.n)]

    def __iter__(self) -> Iterator[TokenEvent]:
        for step in range(self.length):
            if self.should_stop():
                for v in self.variants:
                    v.finish_reason = "cancelled"
                return
            if self.fail_at is not None and step == self.fail_at:
                raise RuntimeError("the fake model broke")
            time.sleep(self.step_s)
            for v in self.variants:
                token = (step + 3 * v.index) % len(WORDS)
                text = WORDS[token]
                v.token_ids.append(token)
                v.token_log_probs.append(-1.0 - 0.1 * v.index)
                v.token_groups.append(token % 2)
                v.text += text
                yield TokenEvent(v.index, token, text, -1.0 - 0.1 * v.index, token % 2)
        for v in self.variants:
            v.finish_reason = "length"


class FakeModel:
    """Stands in for LoadedModel."""

    def __init__(self, capabilities: Capabilities, step_s: float = 0.002, length: int = 12) -> None:
        self._capabilities = capabilities
        self.step_s = step_s
        self.length = length
        self.fail_at: int | None = None
        self.device = torch.device("cpu")
        self.runtime, self.runtime_note = "torch", ""
        self.requests: list[GenerationRequest] = []
        self.prepared: list[str] = []

    @property
    def capabilities(self) -> Capabilities:
        return self._capabilities

    def prepare(self, task: str) -> None:
        self.prepared.append(task)

    def stream(self, request: GenerationRequest, should_stop: Callable[[], bool] | None = None) -> FakeStream:
        self.requests.append(request)
        return FakeStream(request, should_stop or (lambda: False), self.step_s, self.length, self.fail_at)

    def group_names(self) -> list[str]:
        return ["even", "odd"]

    def token_counts(self) -> list[int]:
        return [100 - 5 * i for i in range(len(WORDS))]


class FakeEngine:
    """Stands in for Engine: one bundle (or none / a broken one)."""

    def __init__(self, model: FakeModel | None = None, bundles: list[BundleInfo] | None = None,
                 load_error: str = "") -> None:
        self.model = model or FakeModel(SOFTMAX)
        self.bundles = bundles if bundles is not None else [BundleInfo(Path("/fake/tiny"), "tiny", "softmax",
                                                                       "A fake model for UI tests.")]
        self.load_error = load_error

    def list_bundles(self, extra: Iterable[Path] = ()) -> list[BundleInfo]:
        return list(self.bundles)

    def importable_checkpoints(self) -> list[CheckpointInfo]:
        return []

    def load(self, path: Path, device: str = "auto", runtime: str = "auto") -> FakeModel:
        if self.load_error:
            raise BundleError(self.load_error)
        return self.model
