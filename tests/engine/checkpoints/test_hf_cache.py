"""Names resolve in the local Hugging Face cache, in transformers' order, offline."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from engine.checkpoints.hf_cache import cache_roots, cached_checkpoints, find_checkpoint
from engine.checkpoints.inspect import CheckpointError, CheckpointInfo
from tests.engine.checkpoints.conftest import add_to_cache


def test_cache_roots_follow_transformers_order(tmp_path: Path) -> None:
    env = {"HF_HUB_CACHE": str(tmp_path / "a"), "HF_HOME": str(tmp_path / "h"), "HOME": str(tmp_path / "home")}
    assert cache_roots(env) == [tmp_path / "a", tmp_path / "h" / "hub", tmp_path / "home/.cache/huggingface/hub"]
    assert cache_roots({"HOME": str(tmp_path)}) == [tmp_path / ".cache/huggingface/hub"]


def test_a_name_resolves_to_refs_main(gpt2_folder: Path, tmp_path: Path) -> None:
    cache = tmp_path / "home/.cache/huggingface/hub"
    snapshot = add_to_cache(cache, "acme/tiny-gpt2", gpt2_folder)
    add_to_cache(cache, "acme/tiny-gpt2", gpt2_folder, commit="newer-but-not-main", main=False)
    info = find_checkpoint("acme/tiny-gpt2", {"HOME": str(tmp_path / "home")})
    assert info.path == snapshot and info.name == "acme/tiny-gpt2" and info.family == "gpt2"


def test_without_refs_main_the_newest_snapshot_is_taken(bart_folder: Path, tmp_path: Path) -> None:
    old = add_to_cache(tmp_path, "tiny-bart", bart_folder, commit="old", main=False)
    new = add_to_cache(tmp_path, "tiny-bart", bart_folder, commit="new", main=False)
    os.utime(old, (1, 1))
    assert find_checkpoint("tiny-bart", {"HF_HUB_CACHE": str(tmp_path), "HOME": "/nonexistent"}).path == new


def test_a_folder_is_taken_as_it_is(gpt2_folder: Path) -> None:
    assert find_checkpoint(str(gpt2_folder), {"HOME": "/nonexistent"}).path == gpt2_folder


def test_an_unknown_name_says_where_it_looked_and_that_nothing_is_downloaded(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match=r"not in the local Hugging Face cache \(looked in .*never downloads"):
        find_checkpoint("gpt2", {"HF_HOME": str(tmp_path), "HOME": str(tmp_path)})
    with pytest.raises(CheckpointError, match="not a model name like"):
        find_checkpoint("nope/../../x", {"HOME": str(tmp_path)})


def test_a_blob_missing_from_the_cache_is_a_broken_link(gpt2_folder: Path, tmp_path: Path) -> None:
    snapshot = add_to_cache(tmp_path, "tiny-gpt2", gpt2_folder)
    (snapshot / "merges.txt").resolve().unlink()
    with pytest.raises(CheckpointError, match=r"merges.txt \(the tokenizer's merges\) is a broken link"):
        find_checkpoint("tiny-gpt2", {"HF_HUB_CACHE": str(tmp_path), "HOME": "/nonexistent"})


def test_listing_gives_each_model_or_why_not(gpt2_folder: Path, bart_folder: Path, tmp_path: Path) -> None:
    add_to_cache(tmp_path, "acme/tiny-gpt2", gpt2_folder)
    add_to_cache(tmp_path, "tiny-bart", bart_folder)
    (tmp_path / "models--empty").mkdir()
    listed = dict(cached_checkpoints({"HF_HUB_CACHE": str(tmp_path), "HOME": "/nonexistent"}))
    assert sorted(listed) == ["acme/tiny-gpt2", "empty", "tiny-bart"]
    assert isinstance(listed["acme/tiny-gpt2"], CheckpointInfo) and isinstance(listed["tiny-bart"], CheckpointInfo)
    assert listed["empty"] == f"{tmp_path / 'models--empty'}: no downloaded snapshot in it"
