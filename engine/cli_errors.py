"""How every `variorum` subcommand reports bad input: one `variorum <cmd>: error: …` line on stderr, exit 2.

Bad input is a user's mistake to fix (a missing bundle or file, too little text, a wrong flag value),
so it gets the message and never a traceback; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Protocol

from engine.bundle import BundleError
from engine.pos.tagger import TaggerUnavailableError

# ConfigError, CorpusError, DecodeSettingError, ReaderError, TokenizerError are ValueErrors;
# OSError covers unreadable or unwritable paths.
USER_ERRORS: tuple[type[BaseException], ...] = (BundleError, OSError, ValueError, TaggerUnavailableError)
USAGE_ERROR_EXIT = 2  # argparse's exit status for a bad command line, so bad input always exits 2


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
