"""`python -m engine.cli …`: the `variorum` command without its console script."""

import sys

from engine.cli.main import main

sys.exit(main())
