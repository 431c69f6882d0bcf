"""What a writer can ask of the engine, importable without torch: the tasks and the decoding defaults.

The command line builds its `--help` from this module alone (so it answers without loading
torch or transformers), and `DecodeConfig` takes its defaults from `DECODE_DEFAULTS`, so the
engine, the CLI and the evaluation share one set of defaults.
"""

from __future__ import annotations

from types import MappingProxyType

LM_TASKS: tuple[str, ...] = ("continue",)  # what a decoder-only LM bundle does
# Paragraph tasks of PermGen encoder-decoder bundles (engine/permgen): sentence-ordered stories and
# abstracts from a title and keywords, and a passage rewritten sentence by sentence.
PARAGRAPH_TASKS: tuple[str, ...] = ("story", "abstract", "paraphrase")
TASKS: tuple[str, ...] = (*LM_TASKS, *PARAGRAPH_TASKS)

# The defaults of every decoding setting a writer sees first (engine, CLI, evaluation).
DECODE_DEFAULTS = MappingProxyType({"max_new_tokens": 80, "top_p": 0.9})
