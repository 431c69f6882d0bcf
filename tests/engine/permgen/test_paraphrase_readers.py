"""Paraphrase readers (ParaSCI pairs, MRPC positives) on our own fixture lines, and passage splitting."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.config import TrainConfig
from engine.data.paragraphs import ReaderError
from engine.paraphrase.passage import reassemble, separators, split_passage
from engine.permgen.data import DataStats, example_source, load_examples, target_sentences
from engine.permgen.paraphrase_readers import (
    both_directions,
    read_mrpc,
    read_paraphrase_pairs,
    read_parasci,
    read_turkcorpus_references,
)
from engine.permgen.train import PermGenTrainer
from engine.tokenizer import VariorumTokenizer
from tests.engine.permgen.conftest import FIXTURES, STORIES, tiny_permgen_config

PAIRS = FIXTURES / "paraphrase"
PARASCI = PAIRS / "fixture.src.txt"
MRPC = PAIRS / "msr_paraphrase_fixture.txt"


def test_parasci_reads_line_aligned_pairs() -> None:
    pairs = read_parasci(PARASCI)
    assert len(pairs) == 5
    assert pairs[1].title == "the results show that sampling improves diversity ."
    assert pairs[1].sentences == ("sampling is shown to make the outputs more diverse .",)
    assert pairs[1].keywords == ()
    assert example_source(pairs[1], "paraphrase") == pairs[1].title  # the sentence itself is the source


def _pair_files(tmp_path: Path, source: str, target: str) -> Path:
    (tmp_path / "x.src.txt").write_text(source)
    (tmp_path / "x.tgt.txt").write_text(target)
    return tmp_path / "x.src.txt"


def test_parasci_rejects_unequal_files_and_empty_lines_with_the_line_number(tmp_path: Path) -> None:
    with pytest.raises(ReaderError, match=r"x\.tgt\.txt:3: missing"):
        read_parasci(_pair_files(tmp_path, "a .\nb .\nc .\n", "a2 .\nb2 .\n"))
    with pytest.raises(ReaderError, match=r"x\.src\.txt:2: empty line"):
        read_parasci(_pair_files(tmp_path, "a .\n \nc .\n", "a2 .\nb2 .\nc2 .\n"))
    with pytest.raises(ReaderError, match=r"ends in \.src\.txt"):
        read_parasci(tmp_path / "x.tgt.txt")


def test_mrpc_keeps_positive_pairs_through_bom_and_crlf() -> None:
    assert MRPC.read_bytes().startswith(b"\xef\xbb\xbfQuality") and b"\r\n" in MRPC.read_bytes()
    pairs = read_mrpc(MRPC)
    assert len(pairs) == 2  # the 0-labelled row is dropped
    assert pairs[0].title.lower() == "the committee approved the budget on monday ."
    assert pairs[1].title.lower() == "she did n't attend the meeting , officials said ."  # tokenized like story data
    assert pairs[1].sentences[0].lower() == "officials said she was absent from the meeting ."
    assert pairs[0].title.startswith("The committee")  # case kept: a cased model trains on it as it is


def test_turkcorpus_pairs_each_rewrite_that_differs_from_its_source(tmp_path: Path) -> None:
    path = tmp_path / "tune.8turkers.organized.tsv"
    rewrites = ["The cat sat on the mat.", "A cat sat on the mat .", *["The cat sat on the mat ."] * 6]
    path.write_text("7\tThe cat sat on the mat .\t" + "\t".join(rewrites) + "\n")
    pairs = read_paraphrase_pairs(path)
    assert [p.sentences for p in pairs] == [("A cat sat on the mat .",)]  # "mat." tokenizes to the source
    assert pairs[0].title == "The cat sat on the mat ."
    (source, references), = read_turkcorpus_references(path)
    assert source == "The cat sat on the mat ." and len(references) == 8
    path.write_text("7\tsource\tonly one rewrite\n")
    with pytest.raises(ReaderError, match=r":1: expected id, source and 8 rewrites"):
        read_paraphrase_pairs(path)


def test_lowercase_models_lower_cased_targets_when_encoding() -> None:
    (example,) = [e for e in read_mrpc(MRPC)][:1]
    assert target_sentences(example, lowercase=True) == [example.sentences[0].lower()]
    assert target_sentences(example, lowercase=False) == list(example.sentences)


def test_mrpc_rejects_malformed_lines_with_the_line_number(tmp_path: Path) -> None:
    header = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
    bad = tmp_path / "msr_paraphrase_bad.txt"
    bad.write_text(header + "1\t1\t2\tA b.\tB a.\n1\t3\t4\tonly four fields\n")
    with pytest.raises(ReaderError, match=r"msr_paraphrase_bad\.txt:3: expected 5 TAB-separated"):
        read_mrpc(bad)
    bad.write_text(header + "yes\t1\t2\tA b.\tB a.\n")
    with pytest.raises(ReaderError, match=r":2: .*quality 0 or 1"):
        read_mrpc(bad)
    bad.write_text(header + "1\t1\t2\t \tB a.\n")
    with pytest.raises(ReaderError, match=r":2: empty sentence"):
        read_mrpc(bad)
    bad.write_text("Label\tA\tB\n")
    with pytest.raises(ReaderError, match=r":1: expected the MRPC header"):
        read_mrpc(bad)


def test_format_follows_the_name_and_a_task_reads_only_its_own_files() -> None:
    assert len(read_paraphrase_pairs(PARASCI)) == 5 and len(read_paraphrase_pairs(MRPC)) == 2
    with pytest.raises(ReaderError, match="not a paraphrase file"):
        read_paraphrase_pairs(STORIES)
    assert len(load_examples([PARASCI, MRPC], DataStats(), task="paraphrase")) == 7
    with pytest.raises(ReaderError, match="a paraphrase model trains on paraphrase pairs"):
        load_examples([STORIES], DataStats(), task="paraphrase")
    with pytest.raises(ReaderError, match="a story model trains on paragraphs"):
        load_examples([MRPC], DataStats(), task="story")


def test_passage_split_keeps_abbreviations_initials_decimals_and_layout() -> None:
    text = "Dr. Smith paid 3.5 dollars at 5 p.m. today.  J. K. Rowling wrote it, e.g. this one!\n\nNew part? End"
    spans = split_passage(text)
    assert [text[a:b] for a, b in spans] == [
        "Dr. Smith paid 3.5 dollars at 5 p.m. today.", "J. K. Rowling wrote it, e.g. this one!", "New part?", "End"]
    assert separators(text, spans) == ["", "  ", "\n\n", " "]
    assert reassemble(text, spans, ["A.", "B!", "C?", "D"]) == "A.  B!\n\nC? D"
    assert split_passage("He left at 5 p.m. She stayed.") == [(0, 17), (18, 29)]  # capital after p.m. → split
    assert split_passage("  \n ") == []
    with pytest.raises(ValueError, match="2 sentences for 4 spans"):
        reassemble(text, spans, ["a", "b"])


def test_both_directions_appends_each_pair_reversed() -> None:
    pairs = read_parasci(PARASCI)
    both = both_directions(pairs)
    assert both[:5] == pairs and len(both) == 10
    assert both[6].title == pairs[1].sentences[0] and both[6].sentences == (pairs[1].title,)


def test_training_reverses_only_the_training_pairs(tmp_path: Path, pg_tokenizer: VariorumTokenizer) -> None:
    pg_tokenizer.save(tmp_path / "tok")
    config = tiny_permgen_config(1)
    config.task = "paraphrase"
    train = TrainConfig(train_files=[str(PARASCI)], out_dir=str(tmp_path / "run"), batch_size=2, max_steps=1,
                        device="cpu")
    trainer = PermGenTrainer(config, train, [str(MRPC)], tmp_path / "tok")
    assert len(trainer.train_examples) == 2 * len(read_parasci(PARASCI))
    assert trainer.valid_examples == read_mrpc(MRPC)  # held-out pairs are read one way only
