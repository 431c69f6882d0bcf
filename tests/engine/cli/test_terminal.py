"""`variorum generate` and `variorum bundles` as a person sees them in a terminal (a pseudo-terminal
read through a terminal emulator, so only what stays on the screen counts)."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pyte

ROOT = Path(__file__).resolve().parents[3]
COLUMNS, ROWS = 160, 120  # tall enough that nothing scrolls off


def screen_after(argv: list[str], env: dict[str, str] | None = None) -> list[str]:
    """Run `python -m engine.cli ARGV` on a pseudo-terminal; the non-empty lines left on its screen."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
    merged = {**os.environ, "PYTHONPATH": str(ROOT), "TERM": "xterm-256color", "COLUMNS": str(COLUMNS),
              "LINES": str(ROWS), **(env or {})}
    merged.pop("NO_COLOR", None)
    process = subprocess.Popen([sys.executable, "-m", "engine.cli", *argv], stdin=follower, stdout=follower,
                               stderr=follower, env=merged, cwd=ROOT)
    os.close(follower)
    output = bytearray()
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the child closed the terminal (EIO on Linux)
            break
        if not chunk:
            break
        output += chunk
    process.wait(timeout=120)
    os.close(leader)
    screen = pyte.Screen(COLUMNS, ROWS)
    stream = pyte.ByteStream(screen)
    stream.feed(bytes(output).replace(b"\n", b"\r\n"))  # the pty's onlcr already adds \r; doubled \r is harmless
    assert process.returncode == 0, "\n".join(screen.display)
    return [line.rstrip() for line in screen.display if line.strip()]


def test_generate_shows_each_variant_once_in_a_terminal(tiny_bundle: Path) -> None:
    lines = screen_after(["generate", "--bundle", str(tiny_bundle), "-n", "2", "--seed", "5",
                          "--max-new-tokens", "5", "--drafts", "1"])
    for index, seed in ((1, 5), (2, 6)):
        shown = [line for line in lines if f"variant {index} · seed {seed}" in line]
        assert len(shown) == 1, "\n".join(lines)


def test_bundles_shows_the_user_models_folder(tmp_path: Path) -> None:
    lines = screen_after(["bundles"], env={"XDG_DATA_HOME": str(tmp_path)})
    folder = tmp_path / "variorum" / "models"
    assert any(str(folder) in line for line in lines), "\n".join(lines)
