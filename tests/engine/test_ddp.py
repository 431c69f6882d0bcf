"""DDP: two CPU processes (gloo, under torchrun) follow the one-process run on the same global batch."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import torch
from safetensors.torch import load_file

from tests.conftest import STORIES

FLAGS = [
    "--train-files", str(STORIES), "--vocab-size", "300", "--n-layer", "1", "--n-embd", "32", "--n-head", "2",
    "--block-size", "16", "--dropout", "0", "--batch-size", "4", "--max-steps", "3", "--warmup-steps", "1",
    "--eval-every", "100", "--device", "cpu", "--no-progress",
    "--precision", "float32",  # bf16 products round differently for each rank's half batch; float32's agree
]


def run(command: list[str], out: Path) -> dict[str, torch.Tensor]:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    result = subprocess.run([*command, *FLAGS, "--out-dir", str(out)], capture_output=True, text=True, env=env,
                            timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    return load_file(str(out / "checkpoint" / "model.safetensors"))


def test_two_processes_match_one(tmp_path: Path) -> None:
    single = run([sys.executable, "-m", "engine.lm.train"], tmp_path / "one")
    double = run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
         "-m", "engine.lm.train"],
        tmp_path / "two",
    )
    assert single.keys() == double.keys()
    for key in single:
        assert torch.allclose(single[key], double[key], atol=2e-5), key
