"""Where Qt cannot open a window the app prints one clear line and exits 1, instead of Qt's abort."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from app.qt_platform import debian_package, platform_problem, plugin_problem, xcb_plugin


def test_no_display_gives_one_line_and_exit_1(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    result = subprocess.run([sys.executable, "-m", "app", "--no-model", "--home", str(tmp_path)],
                            capture_output=True, text=True, timeout=120, env=env, check=False)
    assert result.returncode == 1, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("variorum-app: no display"), result.stderr


def test_headless_platforms_and_other_systems_are_not_checked() -> None:
    assert platform_problem({"QT_QPA_PLATFORM": "offscreen"}) is None
    assert platform_problem({"WAYLAND_DISPLAY": "wayland-0"}) is None


def test_a_plugin_that_cannot_load_names_the_package(tmp_path: Path) -> None:
    plugin = tmp_path / "libqxcb.so"
    plugin.write_bytes(b"not a library")
    assert "libqxcb.so cannot load" in (plugin_problem(plugin) or "")
    problem = plugin_problem(xcb_plugin())  # this machine's real plugin: loads, or names what is missing
    assert problem is None or "sudo apt install lib" in problem


def test_debian_package_names() -> None:
    assert debian_package("libxcb-cursor.so.0") == "libxcb-cursor0"
    assert debian_package("libxcb-icccm.so.4") == "libxcb-icccm4"
    assert debian_package("libxkbcommon-x11.so.0") == "libxkbcommon-x11-0"
