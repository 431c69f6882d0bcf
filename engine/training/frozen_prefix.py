"""A fine-tune of a Llama's last blocks computes its frozen blocks' output once (TrainConfig `cache_frozen_blocks`).

With `trainable last-N`, blocks 0 … L − N − 1 and the token embedding never change, so what they make of a
training sequence is the same at every step and every epoch. On a CPU that forward pass is most of a step
(SmolLM2: 26 of 30 blocks), so `FrozenPrefix` computes it once for every training and validation sequence
and the run trains the last N blocks and the head on the stored states: each later epoch costs the top of
the stack only.

The states live in one float32 file under the run folder, `frozen-prefix/blocks-<k>.f32` ([M, T, D], a numpy
memmap), filled in chunks of sequences with a progress bar; `frozen-prefix/state.json` says how many rows
are done and which sequences they are (a sha256 of the token ids), so a stopped run resumes filling where it
stopped, and a run over other text starts the file again. Float32, not half precision: the trained blocks then
see exactly what the full model gives them, and the run's validation equals `variorum perplexity`'s.

The backbone finds the states by the sequence itself (`states(ids)`, a dictionary from each row's bytes to its
row): memoising a pure function of the ids, so every caller — the objectives, validation, the final
perplexity — gets the right hidden states without knowing the cache exists, and a sequence it does not hold
(a rollout, a decode) runs through every block as usual.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Literal

import numpy as np
import torch
from tqdm import tqdm

from engine.backbones.llama import LlamaBackbone
from engine.config import ConfigError, TrainConfig
from engine.files.atomic_writes import write_text_atomic
from engine.torch_modes import eval_mode

CHUNK_ROWS = 8  # sequences per forward pass while filling: a few MB of activations per block


class FrozenPrefix:
    """Hidden states after the first `first_block` blocks for a fixed set of sequences; see the module docstring."""

    def __init__(self, backbone: LlamaBackbone, first_block: int, sequences: torch.Tensor, folder: Path) -> None:
        self.backbone, self.first_block = backbone, first_block
        self.sequences = sequences.cpu()  # [M, T] input ids
        rows, length = self.sequences.shape
        self.row_of = {self._key(row): i for i, row in enumerate(self.sequences)}
        folder.mkdir(parents=True, exist_ok=True)
        self.state_file = folder / "state.json"
        data_file = folder / f"blocks-{first_block}.f32"
        self.digest = hashlib.sha256(self.sequences.numpy().tobytes()).hexdigest()
        self.done = self._done_rows(data_file)
        mode: Literal["r+", "w+"] = "r+" if self.done else "w+"
        self.states_file = np.memmap(str(data_file), dtype=np.float32, mode=mode,
                                     shape=(rows, length, backbone.config.n_embd))  # [M, T, D]

    @staticmethod
    def _key(row: torch.Tensor) -> bytes:
        return row.numpy().tobytes()

    def _done_rows(self, data_file: Path) -> int:
        """Rows already filled by an earlier start of this run over the same sequences, else 0."""
        if not (self.state_file.is_file() and data_file.is_file()):
            return 0
        try:
            state = json.loads(self.state_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return 0
        same = isinstance(state, dict) and state.get("sequences_sha256") == self.digest \
            and state.get("first_block") == self.first_block
        done = state.get("rows_done") if same else 0
        return done if isinstance(done, int) and 0 <= done <= len(self.sequences) else 0

    def fill(self, show_progress: bool = True) -> None:
        """Compute the rows not done yet, a chunk at a time, recording progress after each chunk."""
        rows = len(self.sequences)
        if self.done == rows:
            return
        device = self.backbone.embed.weight.device
        bar = tqdm(total=rows * self.sequences.shape[1], initial=self.done * self.sequences.shape[1], unit="tok",
                   desc=f"frozen blocks 1-{self.first_block}, once", disable=not show_progress, dynamic_ncols=True)
        with torch.no_grad(), eval_mode(self.backbone):
            for start in range(self.done, rows, CHUNK_ROWS):
                ids = self.sequences[start : start + CHUNK_ROWS].to(device)  # [c, T]
                states = self.backbone.run_blocks(self.backbone.embed(ids), 0, self.first_block)  # [c, T, D]
                self.states_file[start : start + len(ids)] = states.float().cpu().numpy()
                self.states_file.flush()
                self.done = start + len(ids)
                write_text_atomic(self.state_file, json.dumps({
                    "sequences_sha256": self.digest, "first_block": self.first_block, "rows_done": self.done}))
                bar.update(ids.numel())
        bar.close()

    def states(self, input_ids: torch.Tensor) -> torch.Tensor | None:
        """[B, T, D] for ids [B, T] when every row is a filled sequence of the set, else None."""
        if input_ids.shape[1] != self.sequences.shape[1]:
            return None
        rows = [self.row_of.get(self._key(row), -1) for row in input_ids.cpu()]
        if any(not 0 <= row < self.done for row in rows):
            return None
        return torch.from_numpy(np.ascontiguousarray(self.states_file[np.asarray(rows)]))


def install_frozen_prefix(backbone: object, config: TrainConfig, sequences: torch.Tensor, folder: Path,
                          show_progress: bool) -> FrozenPrefix:
    """Fill and install the frozen blocks' states of `sequences` for a `last-N` fine-tune of a Llama backbone."""
    if not isinstance(backbone, LlamaBackbone):
        raise ConfigError("cache_frozen_blocks needs a Llama backbone (a GPT-2 runs through transformers' module)")
    if not config.trainable.startswith("last-"):
        raise ConfigError(f"cache_frozen_blocks needs trainable last-N (the first blocks frozen), not "
                          f"{config.trainable}")
    first = len(backbone.blocks) - int(config.trainable.removeprefix("last-"))
    if first < 1:
        raise ConfigError(f"cache_frozen_blocks with {config.trainable}: no block of {len(backbone.blocks)} "
                          "stays frozen")
    prefix = FrozenPrefix(backbone, first, sequences, folder)
    prefix.fill(show_progress)
    backbone.frozen_prefix = prefix
    return prefix
