"""`variorum --help` and `variorum generate --help` load neither torch nor transformers (they answer at once)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

PROBE = """
import sys
from engine.cli import main
try:
    main({argv!r})
except SystemExit:
    pass
heavy = sorted(m for m in ("torch", "transformers", "rich") if m in sys.modules)
print("HEAVY", heavy)
"""


@pytest.mark.parametrize("argv", [["--help"], ["generate", "--help"]])
def test_help_loads_no_heavy_module(argv: list[str]) -> None:
    out = subprocess.run([sys.executable, "-c", PROBE.format(argv=argv)], capture_output=True, text=True, check=True)
    assert "HEAVY []" in out.stdout
    assert "--help" in out.stdout or "usage" in out.stdout


def test_every_command_is_listed_and_forwarded_modules_exist() -> None:
    from engine.cli.main import FORWARDED, build_parser

    help_text = build_parser().format_help()
    for name in ("generate", "bundles", *FORWARDED):
        assert name in help_text
    for module, _ in FORWARDED.values():
        assert importlib.util.find_spec(module) is not None
