"""Model bundles: the one directory format every family is saved in, and what reads it.

`bundle.py` is the one reader and writer (config.json, weights, tokenizer, card; checked before a
model is allocated; the family named by `kind` builds the model, engine/families), `choice.py`
picks the bundle a task starts with (defaults.json, the tasks a bundle writes) and `words.py`
writes a bundle's training words (`variorum bundle-words`, docs/real-words.md). The base of every
bundled model and `BundleError` sit below, in engine/bundled_model.py, with the other model parts.
"""
