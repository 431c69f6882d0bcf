"""The editor: documents in tabs, files, undo, word count, find and per-document generation history."""
