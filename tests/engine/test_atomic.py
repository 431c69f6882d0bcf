"""Atomic directory writes: a failed save keeps the previous folder and leaves no staging behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.atomic import atomic_directory


def test_success_replaces_and_failure_keeps_the_previous_directory(tmp_path: Path) -> None:
    target = tmp_path / "models" / "bundle"
    with atomic_directory(target) as staging:
        (staging / "a.txt").write_text("first")
    assert (target / "a.txt").read_text() == "first"
    with pytest.raises(OSError, match="disk full"), atomic_directory(target) as staging:
        (staging / "a.txt").write_text("second, half written")
        raise OSError("disk full")
    assert (target / "a.txt").read_text() == "first"
    assert sorted(p.name for p in target.parent.iterdir()) == ["bundle"]  # no staging folder left
    with atomic_directory(target) as staging:
        (staging / "b.txt").write_text("second")
    assert sorted(p.name for p in target.iterdir()) == ["b.txt"]
