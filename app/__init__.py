"""Variorum desktop app (PySide6): a writer's window for drafting with many variants at once."""
