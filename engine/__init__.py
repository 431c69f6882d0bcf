"""Variorum's engine: tokenizer, backbones, output heads, training, decoding and metrics.

This package never imports Qt; the desktop app and the command line both talk to it through
`engine.front_door`.
"""

__version__ = "0.1.0"
