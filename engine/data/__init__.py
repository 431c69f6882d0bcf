"""Data: corpus readers, deterministic train/valid splits and token-block datasets."""
