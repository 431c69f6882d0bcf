"""Training, for every model family: the loop, its checkpoints and what a run writes.

`loop.py` (`TrainingLoop`: any family's `BundledModel`, resumable, DDP, the run flags), `checkpoint.py`
(the resumable checkpoints it writes and reads), `precision.py` and `speed.py` (float32 / bf16
autocast, compile, fused AdamW, throughput), `start_weights.py` (starting from a pretrained
checkpoint's weights and tokenizer), `card.py` (a bundle's training card) and `loss_plot.py` (the
loss curve).
A family's trainer (engine/lm/train.py, engine/permgen/train.py) builds on this room; nothing here
knows a family.
"""
