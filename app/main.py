"""Start the app: `python -m app [--home DIR] [files…]` (or the `variorum-app` command)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from PySide6.QtWidgets import QApplication

from app.paths import AppPaths
from app.qt_platform import platform_problem


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="variorum-app", description="Variorum: draft many versions of a text.")
    parser.add_argument("files", nargs="*", type=Path, help="text or Markdown files to open")
    parser.add_argument("--home", type=Path, default=None,
                        help="keep settings and autosaves under this folder instead of the user dirs")
    parser.add_argument("--no-model", action="store_true", help="start without loading a model")
    parser.add_argument("--smoke-test", action="store_true",
                        help="open the window on the bundled model, write a few tokens and exit (0 = works)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.smoke_test:
        return _smoke_test()
    problem = None if QApplication.instance() else platform_problem()
    if problem:
        print(f"variorum-app: {problem}", file=sys.stderr)
        return 1
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("Variorum")
    from app.main_window import MainWindow  # after QApplication: widgets need it

    window = MainWindow(AppPaths.default(args.home), load_model=not args.no_model)
    for path in args.files:
        window.open_path(path)
    window.show()
    return int(app.exec())


def _smoke_test() -> int:
    """The packaged build's self-check (see app/tools/smoke.py)."""
    from app.tools.smoke import run_smoke_test

    return run_smoke_test()
