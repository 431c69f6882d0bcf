"""Small, fixed evaluation splits of the datasets in ../shared/data (deterministic, comparable over time).

Rule, the same for every dataset: read the files with our corpus readers, keep the documents
(or pairs) whose text hash falls in the held-out range, `is_validation(text, fraction)` — the
test used by training's `split_documents` — and, if `max_documents` is set, the first ones in
hash order. So a split never depends on file order, and any bundle trained on these files
with `valid_fraction >= fraction` never saw a split document (the report checks this).

| name | files | documents |
|---|---|---|
| wikitext2 | tokenized valid + test (headings ` = … = ` dropped) | paragraphs |
| rocstories | Diffusion-LM valid + Story Cloze val/test (right ending) | 5-sentence stories |
| brown | the 500 Brown files, `word/tag` → words | whole files (coherent ~2k-word texts) |
| agenda | AGENDA val + test, the abstract field | abstracts |
| parasci | ParaSCI-ACL test, source/target lines | paraphrase pairs (task "paraphrase") |
| turkcorpus | TurkCorpus test: a source and its 8 human rewrites | every row, file order (task "paraphrase") |
| rocstories_story | Plan-and-Write test (title, storyline, 5 sentences) | stories (task "story") |
| agenda_abstract | AGENDA val + test (title, entities, abstract) | abstracts (task "abstract") |
| abstracts | the 30k CC BY paper abstracts (title, extracted keywords, abstract) | abstracts (task "abstract") |

TurkCorpus's test file is a published test split that no recipe trains on (the Paraphrase recipe
reads its tune file), so every row is kept, in file order; `references` holds all 8 rewrites of each
source (multi-reference BLEU), `pairs` the source with its first rewrite.

The three paragraph splits hold `examples` (engine/data/paragraphs.py), selected like the rest with
the hash of the target paragraph — the key PermGen's own training split uses
(engine/permgen/data.py `split_examples`). The Plan-and-Write test file is the authors' test
split; PermGen bundles trained on its dev file (engine/benchmarks/permgen_compare.py) never saw it.
`abstracts` is the part of the abstract file that an Abstract bundle trained on it with `valid_fraction`
0.05 held out: the same file, reader and key. A paragraph split keeps no paragraph of more than 10
sentences, as training drops them (engine/permgen/data.py `load_examples`: no mark numbers an 11th); of
the abstracts that drops 127 of 1,544, of the other two none.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from engine.data.corpus import CorpusError, file_sha256, is_validation, read_documents

if TYPE_CHECKING:
    from engine.data.paragraphs import ParagraphExample

DEFAULT_FRACTION = 0.05  # = TrainConfig.valid_fraction's default: held out by default bundles


def default_data_root() -> Path:
    """$VARIORUM_DATA, else ../shared/data next to the repository."""
    env = os.environ.get("VARIORUM_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[3] / "shared" / "data"


@dataclass(frozen=True)
class EvalSplit:
    """A loaded split: its documents (or source/target pairs) and where they came from."""

    name: str
    documents: list[str]
    files: list[dict[str, str]]
    fraction: float
    pairs: list[tuple[str, str]] = field(default_factory=list)
    examples: list[ParagraphExample] = field(default_factory=list)  # paragraph splits: title, keywords, target
    references: list[list[str]] = field(default_factory=list)  # turkcorpus: every rewrite of each pair's source
    task: str = "continue"  # the engine task the split evaluates (engine/front_door.py TASKS)

    @property
    def sha256(self) -> str:
        """Hash of the split's content, so reports can tell when a split changed."""
        digest = hashlib.sha256()
        lines = self.documents or [f"{s}\t{t}" for s, t in self.pairs] or [_example_line(e) for e in self.examples]
        for text in lines:
            digest.update(text.encode("utf-8") + b"\n")
        return digest.hexdigest()


def _example_line(example: ParagraphExample) -> str:
    return f"{example.title}\t{' '.join(example.keywords)}\t{' '.join(example.sentences)}"


def _wikitext(root: Path) -> list[Path]:
    return [root / "wikitext2" / "tokenized" / f"wiki.{part}.tokens.txt" for part in ("valid", "test")]


def _rocstories(root: Path) -> list[Path]:
    cloze = root / "rocstories" / "story_cloze_2016"
    return [root / "rocstories" / "diffusion_lm" / "roc_valid.json", *sorted(cloze.glob("*.tsv"))]


def _brown(root: Path) -> list[Path]:
    return sorted((root / "brown" / "corpus").glob("c[a-r][0-9][0-9].txt"))


def _agenda(root: Path) -> list[Path]:
    return [root / "agenda" / f"preprocessed.{part}.tsv" for part in ("val", "test")]


def _parasci(root: Path) -> list[Path]:
    base = root / "paraphrase" / "parasci" / "ParaSCI-ACL"
    return [base / "test.src.txt", base / "test.tgt.txt"]


def _abstracts(root: Path) -> list[Path]:
    return [root / "abstracts" / "openreview_jmlr.jsonl"]


def _turkcorpus(root: Path) -> list[Path]:
    return [root / "paraphrase" / "turkcorpus" / "test.8turkers.organized.tsv"]


def _plan_and_write(root: Path) -> list[Path]:
    return [root / "rocstories" / "plan_and_write" / "ROCStories_all_merge_tokenize.titlesepkeysepstory.test.txt"]


def read_brown(path: Path) -> list[str]:
    """One Brown file as one document: `word/tag` tokens → words (the tag follows the last /).

    Whole files, not sentences, so that continuation prefixes are coherent running text.
    """
    lines = path.read_text(encoding="utf-8").splitlines()
    sentences = [" ".join(tok.rsplit("/", 1)[0] for tok in line.split()) for line in lines if line.strip()]
    return [" ".join(sentences)] if sentences else []


def _read_agenda(path: Path) -> list[str]:
    rows = [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    for number, cells in enumerate(rows, start=1):
        if len(cells) != 6:
            raise CorpusError(f"{path}:{number}: expected 6 tab-separated AGENDA fields, got {len(cells)}")
    return [cells[4] for cells in rows]


def _read_lm(files: list[Path], name: str) -> list[str]:
    documents: list[str] = []
    for path in files:
        if name == "brown":
            documents.extend(read_brown(path))
        elif name == "agenda":
            documents.extend(_read_agenda(path))
        else:
            documents.extend(read_documents(path))
    if name == "wikitext2":
        documents = [d for d in documents if not (d.startswith("=") and d.endswith("="))]
    return documents


SPLIT_FILES: dict[str, Callable[[Path], list[Path]]] = {
    "wikitext2": _wikitext, "rocstories": _rocstories, "brown": _brown, "agenda": _agenda, "parasci": _parasci,
    "rocstories_story": _plan_and_write, "agenda_abstract": _agenda, "turkcorpus": _turkcorpus,
    "abstracts": _abstracts,
}
PAIR_SPLITS = ("parasci",)
# split → PermGen task
EXAMPLE_SPLITS = {"rocstories_story": "story", "agenda_abstract": "abstract", "abstracts": "abstract"}
# splits for seq2seq bundles; the rest: "continue"
SPLIT_TASKS = {**EXAMPLE_SPLITS, "parasci": "paraphrase", "turkcorpus": "paraphrase"}


def _select(texts: list[str], fraction: float, max_documents: int | None) -> list[str]:
    held = sorted(
        {t for t in texts if is_validation(t, fraction)}, key=lambda t: hashlib.sha256(t.encode()).hexdigest()
    )
    return held[:max_documents] if max_documents else held


def _select_examples(
    files: list[Path], task: str, fraction: float, max_documents: int | None
) -> list[ParagraphExample]:
    """Held-out examples by the hash of their target paragraph (PermGen's split key), in hash order."""
    from engine.permgen.data import read_task_file  # PermGen's readers, only when a paragraph split is asked for
    from engine.tokenizer import MAX_SENTENCES

    by_key = {" ".join(e.sentences): e for path in files for e in read_task_file(path, task)
              if len(e.sentences) <= MAX_SENTENCES}
    chosen = [by_key[key] for key in _select(list(by_key), fraction, max_documents)]
    return chosen


def load_split(
    name: str, root: Path | None = None, fraction: float = DEFAULT_FRACTION, max_documents: int | None = None
) -> EvalSplit:
    """The evaluation split `name` (see the module table); raises CorpusError naming what is missing."""
    if name not in SPLIT_FILES:
        raise CorpusError(f"unknown evaluation split {name!r}; available: {sorted(SPLIT_FILES)}")
    if not 0 < fraction < 1:
        raise CorpusError(f"split fraction must be in (0, 1), got {fraction}")
    files = SPLIT_FILES[name](root or default_data_root())
    missing = [str(p) for p in files if not p.is_file()]
    if missing or not files:
        raise CorpusError(f"split {name!r}: missing data files {missing or 'none found'} (set VARIORUM_DATA)")
    provenance = [{"path": str(p), "sha256": file_sha256(p)} for p in files]
    if name in EXAMPLE_SPLITS:
        task = EXAMPLE_SPLITS[name]
        return EvalSplit(name, [], provenance, fraction, examples=_select_examples(files, task, fraction,
                                                                                   max_documents), task=task)
    if name == "turkcorpus":
        return _turkcorpus_split(files[0], provenance, fraction, max_documents)
    if name in PAIR_SPLITS:
        sources, targets = (p.read_text(encoding="utf-8").splitlines() for p in files)
        if len(sources) != len(targets):
            raise CorpusError(f"split {name!r}: {len(sources)} sources but {len(targets)} targets")
        joined = _select([f"{s}\t{t}" for s, t in zip(sources, targets, strict=True)], fraction, max_documents)
        pairs = [(j.split("\t", 1)[0], j.split("\t", 1)[1]) for j in joined]
        return EvalSplit(name, [], provenance, fraction, pairs, task=SPLIT_TASKS[name])
    documents = _select(_read_lm(files, name), fraction, max_documents)
    return EvalSplit(name, documents, provenance, fraction)


def _turkcorpus_split(path: Path, provenance: list[dict[str, str]], fraction: float,
                      max_documents: int | None) -> EvalSplit:
    from engine.permgen.paraphrase_readers import read_turkcorpus_references  # PermGen's reader, only when asked

    rows = read_turkcorpus_references(path)
    rows = rows[:max_documents] if max_documents else rows
    return EvalSplit("turkcorpus", [], provenance, fraction, [(source, refs[0]) for source, refs in rows],
                     task="paraphrase", references=[refs for _, refs in rows])


def split_from_file(path: Path, fraction: float = 1.0, max_documents: int | None = None) -> EvalSplit:
    """A split from any corpus file our readers know; fraction 1.0 keeps every document."""
    documents = read_documents(path)
    chosen = documents if fraction >= 1.0 else _select(documents, fraction, None)
    chosen = chosen[:max_documents] if max_documents else chosen
    if not chosen:
        raise CorpusError(f"{path}: no documents in the split")
    return EvalSplit(path.stem, chosen, [{"path": str(path), "sha256": file_sha256(path)}], fraction)
