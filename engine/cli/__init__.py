"""The `variorum` command: what the console script runs, and what only the command line needs.

`main.py` builds the parser and dispatches (`variorum = "engine.cli:main"`; each command's module
is imported only when it runs, so `variorum --help` needs no torch), `generate_flags.py` reads
`variorum generate`'s decoding flags back into a `DecodeConfig` against the model's capabilities,
and `recipes.py` is `variorum build-recipe`. What the other commands share sits lower, since
their own modules use it: flags built from declarations (engine/cli_args.py) and the one-line
report of a user's error (engine/cli_errors.py).
"""

from engine.cli.main import main

__all__ = ["main"]
