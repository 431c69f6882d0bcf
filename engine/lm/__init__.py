"""The language-model family: a peer of engine/permgen/.

What only a decoder-only language model has: its family declaration for the registry
(`family.py`, kind "lm"), its trainer (`train.py`, `variorum train`) and its loaded model
(`loaded.py`, `LanguageLoadedModel`, with the runtime its backbone runs on). The model itself
(`engine/model.py`, `LanguageModel`) stays below, with the other model parts, because decoding,
objectives and diagnostics build on it. Generic code reaches this package only through the
registry (engine/families).
"""
