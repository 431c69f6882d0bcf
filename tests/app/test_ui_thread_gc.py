"""Cyclic garbage is collected on the UI thread, never in a worker thread that happens to allocate."""

from __future__ import annotations

import gc
import threading

from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from app.ui_thread_gc import UiThreadCollector
from tests.app.conftest import MakeWindow


class _Cycle:
    """An object in a reference cycle that records the thread that finalised it."""

    def __init__(self, finalised_in: list[str]) -> None:
        self.me = self
        self.finalised_in = finalised_in

    def __del__(self) -> None:
        self.finalised_in.append(threading.current_thread().name)


def _allocate_in_a_worker() -> list[list[int]]:
    """Allocate far past generation 0's threshold in a worker thread, where Python would start a collection; the
    objects stay alive, so the count stays past the threshold."""
    kept: list[list[int]] = []

    def allocate() -> None:
        kept.extend([index] for index in range(20 * gc.get_threshold()[0]))

    worker = threading.Thread(target=allocate, name="allocating-worker")
    worker.start()
    worker.join()
    return kept


def test_a_window_moves_collection_onto_the_ui_thread(make_window: MakeWindow, qtbot: QtBot) -> None:
    make_window(load_model=False, wait_model=False)
    assert not gc.isenabled()
    finalised_in: list[str] = []
    _Cycle(finalised_in)
    kept = _allocate_in_a_worker()
    assert finalised_in == []  # the worker's allocations started no collection
    qtbot.waitUntil(lambda: finalised_in != [], timeout=2_000)  # the timer's did, while they are still alive
    assert kept
    assert finalised_in == [threading.main_thread().name]


def test_every_window_shares_one_collector(make_window: MakeWindow) -> None:
    make_window(load_model=False, wait_model=False)
    make_window(load_model=False, wait_model=False)
    app = QApplication.instance()
    assert app is not None
    assert len(app.findChildren(UiThreadCollector)) == 1


def test_collect_due_takes_the_oldest_generation_past_its_threshold(make_window: MakeWindow) -> None:
    make_window(load_model=False, wait_model=False)
    gc.collect()
    assert UiThreadCollector.collect_due() == 0  # nothing is due right after a full collection
    finalised_in: list[str] = []
    _Cycle(finalised_in)
    kept = _allocate_in_a_worker()
    assert gc.get_count()[0] > len(kept) > gc.get_threshold()[0]
    assert UiThreadCollector.collect_due() >= 1 and finalised_in  # the cycle
    assert gc.get_count()[0] <= gc.get_threshold()[0]


def test_uninstall_hands_collection_back_to_python(make_window: MakeWindow) -> None:
    make_window(load_model=False, wait_model=False)
    app = QApplication.instance()
    assert app is not None
    UiThreadCollector.uninstall(app)
    try:
        assert gc.isenabled() and not app.findChildren(UiThreadCollector)
    finally:
        UiThreadCollector.install(app)
