"""The language-model family: a peer of engine/permgen/.

What only a decoder-only language model has: its family declaration for the registry
(`family.py`, kind "lm"), its trainer (`train.py`, `variorum train`) and its loaded model
(`loaded.py`, `LanguageLoadedModel`, with the runtime its backbone runs on and its real-words
vocabulary, `lm_vocabulary`). The model itself (`engine/model.py`, `LanguageModel`) stays below, with
the other model parts, because decoding, objectives and diagnostics build on it; so does its typed
bundle (`Bundle`, `load_bundle` in engine/bundles/bundle.py), which perplexity, diagnostics and
evaluation read. Generic code reaches this package only through the registry (engine/families).
"""
