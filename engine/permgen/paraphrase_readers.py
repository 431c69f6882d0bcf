"""Readers for the paraphrase pairs in ../shared/data/paraphrase (see its SOURCE.md).

A pair becomes a `ParagraphExample` with the input sentence as `title`, no keywords, and the
paraphrase as its single target "sentence" (engine/permgen/config.py explains why one sentence).

- ParaSCI `…/{train,val,test}.src.txt` + the sibling `.tgt.txt`: line i of one file is a
  paraphrase of line i of the other (lowercased, tokenized). Both files must have the same number
  of lines and no empty line; the pair is read as src → tgt.
- MRPC `msr_paraphrase_{train,test}.txt`: UTF-8 with a BOM and CRLF, header
  `Quality\\t#1 ID\\t#2 ID\\t#1 String\\t#2 String`; only the positive pairs (Quality 1) are kept,
  #1 → #2. Raw cased text, tokenized like every PermGen input with its case kept (a lowercase model
  lowercases it when encoding, engine/permgen/data.py).

- TurkCorpus `*.8turkers.organized.tsv`: id, source sentence (PTB-tokenized), 8 human rewrites
  (untokenized), TAB-separated; one pair per rewrite (source → rewrite), both tokenized with
  case kept (`normalize(…, lowercase=False)`); rewrites identical to their source are dropped.
  `read_turkcorpus_references` gives each source with all its rewrites (multi-reference BLEU).

Every malformed line raises `ReaderError` naming the file and its line number.

Training reads every pair both ways (`both_directions`): a paraphrase of a sentence has that sentence
as a paraphrase, so B → A is as good a lesson as A → B, and the reversed pairs double what a small
model sees. Only the training side is reversed, after the held-out split, so no held-out pair is
learnt backwards. (TurkCorpus rewrites are simplifications; read backwards they add detail, which
is still a faithful rewrite.)
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from engine.data.paragraphs import ParagraphExample, ReaderError
from engine.data.text import normalize

MRPC_HEADER = ["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"]
PARASCI_SOURCE_SUFFIX = ".src.txt"
PARASCI_TARGET_SUFFIX = ".tgt.txt"


def _read_lines(path: Path) -> list[str]:
    """All lines of a UTF-8 file (BOM dropped, CRLF or LF), empty ones included."""
    try:
        return path.read_text(encoding="utf-8-sig").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise ReaderError(f"{path}: cannot read ({error})") from None


def parasci_target(source: Path) -> Path:
    """The `.tgt.txt` file paired with a ParaSCI `.src.txt` file."""
    if not source.name.endswith(PARASCI_SOURCE_SUFFIX):
        raise ReaderError(f"{source}: a ParaSCI source file ends in {PARASCI_SOURCE_SUFFIX}")
    return source.with_name(source.name.removesuffix(PARASCI_SOURCE_SUFFIX) + PARASCI_TARGET_SUFFIX)


def read_parasci(path: Path) -> list[ParagraphExample]:
    """Pairs (line i of `path`, line i of its `.tgt.txt`)."""
    target_path = parasci_target(path)
    sources, targets = _read_lines(path), _read_lines(target_path)
    if len(sources) != len(targets):
        shorter, line = (target_path, len(targets) + 1) if len(targets) < len(sources) else (path, len(sources) + 1)
        raise ReaderError(f"{shorter}:{line}: missing (the pair files have {len(sources)} and {len(targets)} lines)")
    examples = []
    for number, (source, target) in enumerate(zip(sources, targets, strict=True), start=1):
        for side, text in ((path, source), (target_path, target)):
            if not text.strip():
                raise ReaderError(f"{side}:{number}: empty line (every line must hold a sentence)")
        examples.append(ParagraphExample(" ".join(source.split()), (), (" ".join(target.split()),)))
    return examples


def read_mrpc(path: Path) -> list[ParagraphExample]:
    """The positive (Quality 1) pairs of an MRPC file, #1 String → #2 String, normalised."""
    lines = _read_lines(path)
    if not lines or lines[0].split("\t") != MRPC_HEADER:
        raise ReaderError(f"{path}:1: expected the MRPC header {chr(9).join(MRPC_HEADER)!r}")
    examples = []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != 5 or fields[0] not in ("0", "1"):
            raise ReaderError(f"{path}:{number}: expected 5 TAB-separated fields starting with quality 0 or 1, "
                              f"got {len(fields)} field(s)")
        if not fields[3].strip() or not fields[4].strip():
            raise ReaderError(f"{path}:{number}: empty sentence")
        if fields[0] == "1":
            examples.append(ParagraphExample(normalize(fields[3], lowercase=False), (),
                                             (normalize(fields[4], lowercase=False),)))
    return examples


TURK_REWRITES = 8
TURKCORPUS_SUFFIX = ".8turkers.organized.tsv"


def read_turkcorpus_references(path: Path) -> list[tuple[str, list[str]]]:
    """(source, its 8 rewrites) per row, tokenized with case kept."""
    rows = []
    for number, line in enumerate(_read_lines(path), start=1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != 2 + TURK_REWRITES or not all(f.strip() for f in fields[1:]):
            raise ReaderError(f"{path}:{number}: expected id, source and {TURK_REWRITES} rewrites, TAB-separated "
                              f"and non-empty, got {len(fields)} field(s)")
        rows.append((normalize(fields[1], lowercase=False), [normalize(f, lowercase=False) for f in fields[2:]]))
    return rows


def read_turkcorpus(path: Path) -> list[ParagraphExample]:
    """One (source → rewrite) pair per rewrite that differs from its source."""
    return [ParagraphExample(source, (), (rewrite,)) for source, rewrites in read_turkcorpus_references(path)
            for rewrite in rewrites if rewrite != source]


def both_directions(pairs: list[ParagraphExample]) -> list[ParagraphExample]:
    """`pairs` followed by each pair reversed (target → source); pairs with a multi-sentence target, and a
    sentence paired with itself, stay one way."""
    reversed_pairs = [ParagraphExample(p.sentences[0], (), (p.title,)) for p in pairs
                      if len(p.sentences) == 1 and p.sentences[0] != p.title]
    return pairs + reversed_pairs


PARAPHRASE_READERS: dict[str, Callable[[Path], list[ParagraphExample]]] = {
    "parasci": read_parasci,
    "mrpc": read_mrpc,
    "turkcorpus": read_turkcorpus,
}


def paraphrase_format(path: Path) -> str:
    """"parasci" / "mrpc" / "turkcorpus" when the file name is one of theirs (as in the shared data), else ""."""
    if path.name.endswith(PARASCI_SOURCE_SUFFIX):
        return "parasci"
    if path.name.startswith("msr_paraphrase") and path.suffix == ".txt":
        return "mrpc"
    if path.name.endswith(TURKCORPUS_SUFFIX):
        return "turkcorpus"
    return ""


def read_paraphrase_pairs(path: Path) -> list[ParagraphExample]:
    """Read a ParaSCI source file or an MRPC file (the format follows from the name)."""
    fmt = paraphrase_format(path)
    if not fmt:
        raise ReaderError(f"{path}: not a paraphrase file; pass a ParaSCI '*{PARASCI_SOURCE_SUFFIX}' file "
                          "(its .tgt.txt sibling is read with it), an MRPC 'msr_paraphrase_*.txt' or a "
                          f"TurkCorpus '*{TURKCORPUS_SUFFIX}' file")
    return PARAPHRASE_READERS[fmt](path)
