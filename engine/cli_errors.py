"""How every `variorum` subcommand reports bad input: one `variorum <cmd>: error: …` line on stderr, exit 2.

Bad input is a user's mistake to fix (a missing bundle or file, too little text, a wrong flag value),
so it gets the message and never a traceback; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import functools
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from engine.bundled_model import BundleError
from engine.pos.tagger import TaggerUnavailableError

# ConfigError, CorpusError, DecodeSettingError, ReaderError, TokenizerError are ValueErrors;
# OSError covers unreadable or unwritable paths.
USER_ERRORS: tuple[type[BaseException], ...] = (BundleError, OSError, ValueError, TaggerUnavailableError)
USAGE_ERROR_EXIT = 2  # argparse's exit status for a bad command line, so bad input always exits 2


class OutputPathError(ValueError):
    """An output path given on the command line cannot be written (checked before any work is done)."""


def check_output_file(flag: str, path: Path) -> None:
    """Before the work: `path` must name a file (not a folder) in a folder this process can write."""
    if path.is_dir():
        raise OutputPathError(f"{flag} {path} is a folder; give a file name, e.g. {path / 'figure.png'}")
    _check_writable(flag, path.parent)


def check_output_dir(flag: str, path: Path) -> None:
    """Before the work: `path` must be a folder, or one this process can make (nothing is made here, so a
    run that fails later leaves no empty folder behind)."""
    if path.exists() and not path.is_dir():
        raise OutputPathError(f"{flag} {path} is a file, not a folder")
    existing = next(folder for folder in (path, *path.absolute().parents) if folder.exists())
    if not existing.is_dir():
        raise OutputPathError(f"{flag} {path} cannot be made: {existing} is a file")
    _check_writable(flag, existing)


def _check_writable(flag: str, folder: Path) -> None:
    try:  # a real file: permission bits alone miss read-only mounts and say nothing for root
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as error:
        raise OutputPathError(f"{flag}: cannot write in {folder} ({error.strerror or error})") from None


class SubcommandMain(Protocol):
    """A subcommand's entry point: `main(argv)` -> exit status (argv None = sys.argv[1:])."""

    def __call__(self, argv: list[str] | None = None) -> int: ...


def report_user_error(command: str, error: BaseException) -> int:
    """Print `variorum <command>: error: <error>` on stderr; the exit status to return."""
    print(f"variorum {command}: error: {error}", file=sys.stderr)
    return USAGE_ERROR_EXIT


def reports_user_errors(command: str) -> Callable[[SubcommandMain], SubcommandMain]:
    """Decorate a subcommand's `main(argv)` so bad input ends in one error line and exit 2."""

    def decorate(main: SubcommandMain) -> SubcommandMain:
        @functools.wraps(main)
        def guarded(argv: list[str] | None = None) -> int:
            try:
                return main(argv)
            except USER_ERRORS as error:
                return report_user_error(command, error)

        return guarded

    return decorate
