"""`variorum eval`: evaluation splits, the papers' protocols, and Markdown/JSON/PNG reports."""
