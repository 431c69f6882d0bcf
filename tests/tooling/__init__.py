"""Tests of the repository's scripts: CI, venv set-up and packaging."""
