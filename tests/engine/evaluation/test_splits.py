"""Evaluation splits: deterministic, independent of file order, held out of training, clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.data.corpus import CorpusError, is_validation, split_documents
from engine.evaluation.splits import load_split, read_brown, split_from_file
from tests.engine.evaluation.conftest import TINY_SPLIT


def fake_root(tmp_path: Path, lines: list[str]) -> Path:
    folder = tmp_path / "wikitext2" / "tokenized"
    folder.mkdir(parents=True)
    (folder / "wiki.valid.tokens.txt").write_text("\n".join(lines[: len(lines) // 2]) + "\n")
    (folder / "wiki.test.tokens.txt").write_text(" = Heading = \n" + "\n".join(lines[len(lines) // 2 :]) + "\n")
    return tmp_path


def test_split_is_deterministic_held_out_and_order_free(tmp_path: Path) -> None:
    lines = [f"paragraph number {i} of the fake wiki ." for i in range(400)]
    split = load_split("wikitext2", fake_root(tmp_path / "a", lines), fraction=0.1)
    assert split.documents and all(is_validation(d, 0.1) for d in split.documents)
    assert not any(d.startswith("=") for d in split.documents)
    _, valid = split_documents(lines, 0.1)
    assert sorted(split.documents) == sorted(valid)  # exactly training's held-out documents
    again = load_split("wikitext2", fake_root(tmp_path / "b", lines[::-1]), fraction=0.1)
    assert again.documents == split.documents and again.sha256 == split.sha256
    assert load_split("wikitext2", tmp_path / "a", fraction=0.1, max_documents=3).documents == split.documents[:3]


def test_missing_and_unknown_splits_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match="missing data files"):
        load_split("rocstories", tmp_path)
    with pytest.raises(CorpusError, match="unknown evaluation split"):
        load_split("imdb", tmp_path)


def test_brown_reader_strips_tags(tmp_path: Path) -> None:
    path = tmp_path / "ca01.txt"
    path.write_text("\n\n\tThe/at jury/nn said/vbd ./.\n\n\n\tIt/pps was/bedz A/B/np ./.\n")
    assert read_brown(path) == ["The jury said . It was A/B ."]


def test_split_from_file_keeps_every_document() -> None:
    split = split_from_file(TINY_SPLIT)
    assert len(split.documents) == 5 and split.fraction == 1.0


def story_root(tmp_path: Path, lines: list[str]) -> Path:
    folder = tmp_path / "rocstories" / "plan_and_write"
    folder.mkdir(parents=True)
    (folder / "ROCStories_all_merge_tokenize.titlesepkeysepstory.test.txt").write_text("\n".join(lines) + "\n")
    return tmp_path


def test_story_split_is_permgens_own_held_out_part(tmp_path: Path) -> None:
    from engine.data.paragraphs import read_plan_and_write
    from engine.permgen.data import split_examples

    lines = [f"story {i} <EOT> cat{i} dog <EOL> </s> a cat number {i} sat . </s> then it ran {i % 7} miles ."
             for i in range(300)]
    split = load_split("rocstories_story", story_root(tmp_path / "a", lines), fraction=0.1)
    assert split.task == "story" and not split.documents and split.examples
    everything = read_plan_and_write(tmp_path / "a" / "rocstories" / "plan_and_write" /
                                     "ROCStories_all_merge_tokenize.titlesepkeysepstory.test.txt")
    _, valid = split_examples(everything, 0.1)  # what a PermGen bundle with valid_fraction 0.1 holds out
    assert sorted(e.title for e in split.examples) == sorted(e.title for e in valid)
    again = load_split("rocstories_story", story_root(tmp_path / "b", lines[::-1]), fraction=0.1)
    assert again.examples == split.examples and again.sha256 == split.sha256
    capped = load_split("rocstories_story", tmp_path / "a", fraction=0.1, max_documents=2)
    assert capped.examples == split.examples[:2] and capped.sha256 != split.sha256


def test_abstract_split_is_what_an_abstract_bundle_held_out(tmp_path: Path) -> None:
    import json

    from engine.permgen.data import DataStats, load_examples, split_examples

    rows = [{"title": f"Paper {i}", "abstract": " ".join(f"We study case {i} in part {j}." for j in range(1 + i % 12))}
            for i in range(400)]
    folder = tmp_path / "abstracts"
    folder.mkdir()
    path = folder / "openreview_jmlr.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    split = load_split("abstracts", tmp_path, fraction=0.1)
    assert split.task == "abstract" and not split.documents and split.examples
    _, valid = split_examples(load_examples([path], DataStats(), task="abstract"), 0.1)  # training's held-out part
    assert sorted(e.title for e in split.examples) == sorted(e.title for e in valid)
    from engine.permgen.readers import read_abstracts

    long_held = [e.title for e in read_abstracts(path)
                 if len(e.sentences) > 10 and is_validation(" ".join(e.sentences), 0.1)]
    assert long_held and not set(long_held) & {e.title for e in split.examples}  # no mark numbers an 11th
