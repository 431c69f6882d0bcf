"""How a PermGen model reads its input and writes its sentences: normalised text, or prose for a pretrained base.

`text_form` "normalized" (every model trained from scratch): the source is "title : … keywords : a , b" and
the sentences are the readers' normalised words (engine/data/text.py), lowercased for a `lowercase` model.

`text_form` "prose" (a decoder-only model on a pretrained base; docs/permgen-decoder-only.md): the base
learnt from ordinary cased prose, so the model reads and writes that. The readers' normalised text is
detokenized and, where it is written all in lowercase (a lowercased data set, or a lowercase model's input), its
case restored from a case table learnt from cased files (engine/data/truecase.py); text that has capitals keeps
the case it has, since the table would also change common words a cased text writes in lowercase ("a black
cord" → "a Black cord" with the WikiText-2 table, whose files capitalise "black" more often than not):

    Title: Jenny's first loaf                  Paraphrase this sentence: She baked bread.
    Keywords: bread, oven, Jenny               Paraphrase:
    Story:

and each sentence is written with the leading space it has inside prose (" She put it in the oven."), so
its first piece is the base's usual mid-text one. The last line names the task and joins source and target
as text does; no eos sits between them (in pretraining an eos ends a document, and what follows it does
not depend on what came before). The joiner is kept whole when a long source is cut.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from engine.data.text import detokenize, join_tokens, normalize
from engine.data.truecase import CaseTable
from engine.permgen.content_words import PARAPHRASE_INSTRUCTION
from engine.tokenizer import VariorumTokenizer

TEXT_FORMS = ("normalized", "prose")
TASK_LINES = {"story": "Story", "abstract": "Abstract", "paraphrase": "Paraphrase"}  # the joiner's word


def format_source(title: str, keywords: Sequence[str], lowercase: bool = True) -> str:
    """The normalised source: title and keywords, normalised, in one fixed form."""
    words = " , ".join(normalize(k, lowercase) for k in keywords if k.strip())
    return f"title : {normalize(title, lowercase)} keywords : {words}"


@dataclass(frozen=True)
class ProseForm:
    """A prose model's texts (see the module docstring): `case` restores the case of lowercased text."""

    task: str
    lowercase: bool = True
    case: CaseTable | None = None

    def _prose(self, normalized: str, join: Callable[[str], str] = detokenize) -> str:
        """Normalised text joined as prose (`join`), its case restored only when it is all lowercase."""
        text = join(normalized)
        return self.case.restore(text) if self.case is not None and normalized.islower() else text

    def source(self, title: str, keywords: Sequence[str]) -> str:
        """The source's text before the joiner: the title and keywords as prose; for a paraphrase, the
        instruction and the sentence (its `title`)."""
        if self.task == "paraphrase":
            return f"{PARAPHRASE_INSTRUCTION}{self.sentence(normalize(title, self.lowercase))}"
        words = ", ".join(self._prose(normalize(k, self.lowercase), join_tokens) for k in keywords if k.strip())
        return f"Title: {self._prose(normalize(title, self.lowercase))}\nKeywords: {words}"

    @property
    def joiner(self) -> str:
        """The line that ends the source and names what follows it."""
        return f"\n{TASK_LINES[self.task]}:"

    def sentence(self, normalized: str) -> str:
        """A normalised target sentence as the model writes it: prose, cased, after a space."""
        return " " + self._prose(normalized)


def read_prose_form(task: str, lowercase: bool, text_form: str, directory: Path) -> ProseForm | None:
    """A bundle's prose form, with the case table it was trained with (`directory`/case.json); None for a
    normalised model."""
    if text_form != "prose":
        return None
    return ProseForm(task, lowercase, CaseTable.read(directory))


def encode_sources(tokenizer: VariorumTokenizer, texts: Sequence[str], max_len: int,
                   prose: ProseForm | None = None) -> tuple[list[list[int]], int]:
    """Each source's ids, at most `max_len` of them (a prose source keeps its whole joiner after its cut text),
    and how many sources were cut."""
    joiner = tokenizer.encode(prose.joiner) if prose is not None else []
    room = max_len - len(joiner)
    encoded = tokenizer.encode_batch(list(texts))
    return [ids[:room] + joiner for ids in encoded], sum(len(ids) > room for ids in encoded)
