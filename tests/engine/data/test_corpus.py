"""Corpus readers: each file kind, malformed lines with their line numbers, the hash split."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.data.corpus import CorpusError, read_corpus, read_documents, split_documents

CLOZE_HEADER = (
    "InputStoryid\tInputSentence1\tInputSentence2\tInputSentence3\tInputSentence4\t"
    "RandomFifthSentenceQuiz1\tRandomFifthSentenceQuiz2\tAnswerRightEnding"
)


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_text_file_is_one_document_per_non_empty_line(tmp_path: Path) -> None:
    path = write(tmp_path, "a.txt", "First story.\n\n  Second story.  \n")
    assert read_documents(path) == ["First story.", "Second story."]


def test_jsonl_accepts_strings_lists_and_text_objects(tmp_path: Path) -> None:
    path = write(tmp_path, "a.jsonl", '"plain"\n["two", "sentences."]\n{"text": "object", "id": 3}\n')
    assert read_documents(path) == ["plain", "two sentences.", "object"]


def test_malformed_json_names_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.jsonl", '"ok"\n{"text": \n')
    with pytest.raises(CorpusError, match=r"bad\.jsonl:2: invalid JSON"):
        read_documents(path)


def test_json_of_wrong_shape_names_line(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.jsonl", '"ok"\n"fine"\n{"title": 1}\n')
    with pytest.raises(CorpusError, match=r"bad\.jsonl:3: expected a string"):
        read_documents(path)


def test_story_cloze_keeps_the_right_ending(tmp_path: Path) -> None:
    rows = [CLOZE_HEADER, "id1\tA.\tB.\tC.\tD.\tGood end.\tBad end.\t1", "id2\tA.\tB.\tC.\tD.\tBad.\tRight.\t2"]
    path = write(tmp_path, "cloze.tsv", "\n".join(rows) + "\n")
    assert read_documents(path) == ["A. B. C. D. Good end.", "A. B. C. D. Right."]


def test_story_cloze_bad_row_names_line(tmp_path: Path) -> None:
    path = write(tmp_path, "cloze.tsv", CLOZE_HEADER + "\nid1\tA.\tB.\n")
    with pytest.raises(CorpusError, match=r"cloze\.tsv:2: expected 8"):
        read_documents(path)


def test_unknown_kinds_missing_files_and_empty_corpus(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match="unknown corpus kind"):
        read_documents(write(tmp_path, "a.csv", "x"))
    with pytest.raises(CorpusError, match="unknown TSV layout"):
        read_documents(write(tmp_path, "a.tsv", "a\tb\n"))
    with pytest.raises(CorpusError, match="does not exist"):
        read_documents(tmp_path / "missing.txt")
    with pytest.raises(CorpusError, match="no documents"):
        read_corpus([write(tmp_path, "empty.txt", "\n\n")])
    (tmp_path / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    with pytest.raises(CorpusError, match="not UTF-8"):
        read_documents(tmp_path / "latin1.txt")


def test_split_is_independent_of_order_and_keeps_duplicates_together() -> None:
    documents = [f"document number {i}" for i in range(400)] + ["document number 7"]
    train, valid = split_documents(documents, 0.25)
    reversed_train, reversed_valid = split_documents(documents[::-1], 0.25)
    assert sorted(train) == sorted(reversed_train)
    assert sorted(valid) == sorted(reversed_valid)
    assert 60 < len(valid) < 140  # about a quarter of 401
    assert ("document number 7" in train) != ("document number 7" in valid)
