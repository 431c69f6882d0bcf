"""`python -m app` starts the desktop app."""

from app.main import main

raise SystemExit(main())
