"""Generation and model loading off the UI thread.

The engine's stream runs in a plain Python thread and appends its TokenEvents to a buffer; a
QTimer on the UI thread drains the buffer every `DRAIN_MS` and emits one `tokens` signal per
drain, so the UI repaints at most ~30 times a second however fast tokens arrive (throttling),
and no Qt object is touched from the worker thread. Stop sets an Event the engine checks before
every token step (`should_stop`), so the thread ends after at most one model step.
"""

from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal

from engine.front_door import GenerationRequest, LoadedModel, SelectingStream, TokenEvent, Variant

DRAIN_MS = 30
STOP_POLL_MS = 5
SHUTDOWN_WAIT_S = 30.0  # the engine checks should_stop every step, so this is only reached by a hung step


@dataclass
class GenerationOutcome:
    """How a generation ended: its variants (partial when stopped), or the error."""

    request: GenerationRequest
    targets: list[int]  # pane index of each engine variant
    variants: list[Variant] = field(default_factory=list)
    stopped: bool = False
    error: str = ""
    tokens: int = 0  # every token written, drafts included (the speed a writer waits on)
    seconds: float = 0.0
    drafted: int = 0  # tokens of drafts, which the window does not show (engine/selection)
    choosing: bool = False  # the drafts are written and being scored


class _Job:
    """The worker thread's side: iterate the stream, buffer events, record the outcome."""

    def __init__(self, model: LoadedModel, request: GenerationRequest, targets: list[int]) -> None:
        self.stop_event = threading.Event()
        self.lock = threading.Lock()
        self.buffer: list[TokenEvent] = []
        self.outcome = GenerationOutcome(request, targets)
        self.model = model
        self.thread = threading.Thread(target=self._run, name="variorum-generate", daemon=True)
        self.started = time.perf_counter()

    def _run(self) -> None:
        try:
            stream = self.model.stream(self.outcome.request, self.stop_event.is_set)
            if isinstance(stream, SelectingStream):
                stream.on_scoring = self._choosing
            for event in stream:
                if event.draft:
                    self.outcome.drafted += 1
                else:
                    with self.lock:
                        self.buffer.append(event)
                if event.draft or not self.outcome.drafted:  # chosen drafts are shown again, not written again
                    self.outcome.tokens += 1
            self.outcome.variants = stream.variants
        except Exception as error:  # any engine failure becomes a message in the window
            # A ValueError is the engine refusing this request (a passage too long, settings the model cannot
            # honour) and says why in words; anything else is a fault, named by its type for a bug report.
            self.outcome.error = str(error) if isinstance(error, ValueError) else f"{type(error).__name__}: {error}"
            traceback.print_exc()
        self.outcome.stopped = self.stop_event.is_set()
        self.outcome.seconds = time.perf_counter() - self.started

    def _choosing(self) -> None:
        self.outcome.choosing = True

    def take(self) -> list[TokenEvent]:
        with self.lock:
            events, self.buffer = self.buffer, []
        return events


class GenerationController(QObject):
    """Runs one generation at a time; emits throttled token batches and the final outcome."""

    tokens = Signal(list)  # list[tuple[int, TokenEvent]]: (pane index, event)
    finished = Signal(object)  # GenerationOutcome

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._job: _Job | None = None
        self._timer = QTimer(self)
        self._timer.timeout.connect(self._drain)

    @property
    def running(self) -> bool:
        return self._job is not None

    @property
    def worker_thread(self) -> threading.Thread | None:
        """The running generation's thread (named so as not to hide QObject.thread())."""
        return self._job.thread if self._job else None

    def start(self, model: LoadedModel, request: GenerationRequest, targets: list[int] | None = None) -> None:
        if self._job is not None:
            raise RuntimeError("a generation is already running; stop it first")
        self._job = _Job(model, request, targets if targets is not None else list(range(request.n)))
        self._job.thread.start()
        self._timer.start(DRAIN_MS)

    def stop(self) -> None:
        """Ask the engine to stop at its next token step and watch closely for the thread's end."""
        if self._job is not None:
            self._job.stop_event.set()
            self._timer.start(STOP_POLL_MS)

    def shutdown(self, timeout_s: float = SHUTDOWN_WAIT_S) -> None:
        """Quitting: stop and wait for the worker thread, dropping its outcome. A daemon thread still inside
        torch when the interpreter exits aborts the process ("terminate called…", exit 134)."""
        job, self._job = self._job, None
        self._timer.stop()
        if job is not None:
            job.stop_event.set()
            job.thread.join(timeout_s)

    def progress(self) -> tuple[int, float]:
        """Tokens written so far by the running generation and the seconds since it started ((0, 0) when idle)."""
        if self._job is None:
            return 0, 0.0
        return self._job.outcome.tokens, time.perf_counter() - self._job.started

    def drafting(self) -> tuple[int, bool]:
        """Draft tokens written so far, and whether the drafts are being scored ((0, False) when idle or when
        every draft is shown)."""
        if self._job is None:
            return 0, False
        return self._job.outcome.drafted, self._job.outcome.choosing

    def _drain(self) -> None:
        job = self._job
        if job is None:
            self._timer.stop()
            return
        done = not job.thread.is_alive()
        events = job.take()
        if events:
            targets = job.outcome.targets
            self.tokens.emit([(targets[e.variant], e) for e in events])
        if done:
            self._timer.stop()
            self._job = None
            self.finished.emit(job.outcome)


class BackgroundCall(QObject):
    """Run `fn()` in a thread; emit `done(result)` or `failed(message)` on the UI thread."""

    done = Signal(object)
    failed = Signal(str)

    def __init__(self, fn: Callable[[], Any], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._fn = fn
        self._result: Any = None
        self._error = ""
        self._thread = threading.Thread(target=self._run, name="variorum-background", daemon=True)
        self._timer = QTimer(self)
        self._timer.timeout.connect(self._poll)

    def start(self) -> None:
        self._thread.start()
        self._timer.start(20)

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def wait(self, timeout_s: float = SHUTDOWN_WAIT_S) -> None:
        """Block until the call has returned (quitting: see GenerationController.shutdown)."""
        if self._thread.is_alive():
            self._thread.join(timeout_s)

    def _run(self) -> None:
        try:
            self._result = self._fn()
        except Exception as error:
            self._error = str(error) or type(error).__name__

    def _poll(self) -> None:
        if self._thread.is_alive():
            return
        self._timer.stop()
        if self._error:
            self.failed.emit(self._error)
        else:
            self.done.emit(self._result)
