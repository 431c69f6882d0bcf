"""The variants panel: N panes filled as tokens stream, per-variant actions, diversity and colouring."""
