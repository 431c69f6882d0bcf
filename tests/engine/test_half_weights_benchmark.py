"""The float16 / float32 benchmark runs on a tiny imported Llama and prints both perplexities and speeds."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.benchmarks import half_weights
from engine.bundles.imported import import_checkpoint
from engine.packed_linear import half_products_available
from tests.engine.checkpoints.conftest import write_llama


@pytest.mark.skipif(not half_products_available(), reason="this PyTorch build has no FBGEMM")
def test_it_prints_the_perplexity_change_and_the_speed_ratio(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    bundle = import_checkpoint(str(write_llama(tmp_path / "checkpoint")), tmp_path / "tiny", {"HOME": "/nonexistent"})
    text = tmp_path / "stories.txt"
    text.write_text("\n".join(f"The cat {i} sat on mat {i * 7} and then it ran home." for i in range(400)) + "\n")
    half_weights.main(["--bundle", str(bundle), "--files", str(text), "--shapes", "2x4", "--rounds", "1",
                       "--block", "16", "--max-tokens", "64"])
    out = capsys.readouterr().out
    assert "4 held-out blocks of 16 tokens" in out and "perplexity change" in out
    row = next(line for line in out.splitlines() if line.strip().startswith("2 × 4"))
    assert len(row.split()) == 6  # shape (3 fields), float32 and float16 tokens/s, their ratio


def test_a_model_that_keeps_no_packed_weights_is_refused(tmp_path: Path) -> None:
    from engine.front_door import RESOURCES_MODELS

    with pytest.raises(SystemExit, match="not a Llama"):
        half_weights.loaded_to_generate(RESOURCES_MODELS / "roc-stories-tiny", half=True)
