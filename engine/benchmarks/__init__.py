"""Benchmark scripts (not tests): each prints measurements taken side by side in one run."""
