"""Restoring the case of lowercased text from how cased text writes the same words.

Some sources are lowercased (the Plan-and-Write ROCStories: "oliver was playing in his yard").
`detokenize` (engine/data/text.py) capitalises sentence starts and "I", but not names, so a model
trained on such text learns to write "tom broke his leg". A `CaseTable` learns, from cased text,
the usual form of each word **in mid-sentence** (not the first word of a text or of a sentence,
where every word is capitalised): a word is restored to a form F when F is not all lowercase, at
least `min_count` mid-sentence occurrences were seen and F is more than `min_share` of them. So
"tom" → "Tom" (a name, nearly always capitalised), while "rose", "may" or "us" stay lowercase
(mostly common words), and a word the cased text never has mid-sentence is left as it is.

`CaseTable.restore` touches only words written all lowercase or with just the first letter
capitalised (a sentence start), so text that already has its case keeps it. A word is what the
invented-word rate counts (engine/metrics/invented.py): a maximal run of letters.

Measured with `python -m engine.data.truecase --learn FILES --test FILES`: the test files' cased
texts are lowercased and word-tokenized as Plan-and-Write is, detokenized, restored, and compared
word by word with the original (docs/truecasing.md).
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

from engine.data.text import WORD
from engine.files.atomic_writes import write_text_atomic

CASE_FILE = "case.json"  # a bundle's table, for models that write lowercased text: {"forms": {word: form}}
TITLE_CASE_MIN_LETTERS = 4  # a title whose words of this many letters are all capitalised is in title case

_OPENERS = " \t\n\"'([“‘"
_QUOTES = "\"'“‘"
_CLOSERS = "\"')]”’"


def starts_sentence(text: str, start: int) -> bool:
    """Whether the word at `start` begins `text` or a sentence: it follows an opening quote (quoted speech), or
    only spaces and opening brackets separate it from the start or from . ! ? (and closing quotes)."""
    i = start  # scan back in place: slicing text[:start] for every word would be quadratic in the text
    while i > 0 and text[i - 1] in _OPENERS:
        i -= 1
    if any(quote in text[i:start] for quote in _QUOTES):  # quoted speech starts a sentence
        return True
    while i > 0 and text[i - 1] in _CLOSERS:
        i -= 1
    return i == 0 or text[i - 1] in ".!?"


def mid_sentence_words(text: str) -> Iterable[str]:
    """The words of `text` (as written) that do not start it or one of its sentences."""
    return (m.group() for m in WORD.finditer(text) if not starts_sentence(text, m.start()))


class CaseTable:
    """Lowercase word → its usual mid-sentence form, for the words whose usual form has capitals."""

    def __init__(self, forms: dict[str, str]) -> None:
        for key, form in forms.items():
            if key != key.lower() or form.lower() != key or form == key:
                raise ValueError(f"case table entry {key!r} → {form!r} is not a lowercase word → its cased form")
        self.forms = dict(forms)

    @classmethod
    def learn(cls, texts: Iterable[str], min_count: int = 2, min_share: float = 0.5) -> CaseTable:
        """The table of `texts` (cased): see the module docstring for `min_count` and `min_share`."""
        if min_count < 1 or not 0.0 <= min_share < 1.0:
            raise ValueError(f"min_count must be >= 1 and min_share in [0, 1), got {min_count}, {min_share}")
        counts: defaultdict[str, Counter[str]] = defaultdict(Counter)
        for text in texts:
            for word in mid_sentence_words(text):
                counts[word.lower()][word] += 1
        forms = {}
        for key, seen in counts.items():
            form, count = seen.most_common(1)[0]
            total = sum(seen.values())
            if form != key and total >= min_count and count / total > min_share:
                forms[key] = form
        return cls(forms)

    @classmethod
    def read(cls, directory: Path) -> CaseTable | None:
        """The table in `directory/case.json`; None when there is none. ValueError when it is malformed."""
        path = Path(directory) / CASE_FILE
        if not path.is_file():
            return None
        try:
            forms = json.loads(path.read_text(encoding="utf-8"))["forms"]
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as error:
            raise ValueError(f"{path}: not a case table ({error})") from None
        if not isinstance(forms, dict) or not all(isinstance(v, str) for v in forms.values()):
            raise ValueError(f"{path}: \"forms\" must map words to their forms")
        return cls(forms)

    def write(self, directory: Path) -> Path:
        """Write the table to `directory/case.json` (sorted, so a rebuild gives the same file; atomically)."""
        path = Path(directory) / CASE_FILE
        write_text_atomic(path, json.dumps({"forms": dict(sorted(self.forms.items()))}, ensure_ascii=False,
                                           indent=0) + "\n")
        return path

    def with_writer_words(self, title: str, keywords: Sequence[str], texts: Sequence[str]) -> CaseTable:
        """This table plus the forms the writer gave names: capitalised words of `keywords`, and those in
        mid-sentence of `texts` and of `title` (unless the title is in title case, where every word is)."""
        written = [w for keyword in keywords for w in WORD.findall(keyword)]
        written += [w for text in (*texts, *([] if is_title_case(title) else [title]))
                    for w in mid_sentence_words(text)]
        forms = dict(self.forms)
        # a word with capitals; not `not w.islower()`, which also holds for scripts without case (Hebrew)
        forms.update({w.lower(): w for w in written if w != w.lower() and w != "I"})
        return CaseTable(forms)

    def __len__(self) -> int:
        return len(self.forms)

    def restore(self, text: str) -> str:
        """`text` with each lowercase (or sentence-start capitalised) word the table knows in its usual form."""
        return WORD.sub(self._restore_word, text) if self.forms else text

    def _restore_word(self, match: re.Match[str]) -> str:
        word, start = match.group(), match.start()
        if start >= 2 and match.string[start - 1] in "'’" and match.string[start - 2].isalpha():
            return word  # a clitic ("i'd": the "d" of a name's initial "D" is not this one)
        form = self.forms.get(word.lower())
        if form is None or not (word.islower() or word == word[0].upper() + word[1:].lower()):
            return word
        return form


def is_title_case(title: str) -> bool:
    """Whether every word of TITLE_CASE_MIN_LETTERS or more letters after the first is capitalised."""
    long_words = [w for w in WORD.findall(title)[1:] if len(w) >= TITLE_CASE_MIN_LETTERS]
    return bool(long_words) and all(w[0].isupper() for w in long_words)


def restore_lowercased(documents: Sequence[tuple[str, bool]]) -> list[str]:
    """Documents as (text, lowercased?) → the texts, the lowercased ones restored from the others' case."""
    if not any(lowercased for _, lowercased in documents):
        return [text for text, _ in documents]
    table = CaseTable.learn(text for text, lowercased in documents if not lowercased)
    return [table.restore(text) if lowercased else text for text, lowercased in documents]


def case_accuracy(originals: Sequence[str], table: CaseTable) -> dict[str, float]:
    """Word-level case accuracy of lowercased-then-restored `originals` (cased texts), with and without `table`.

    Each text goes through what a lowercased source went through (`normalize`, then `detokenize`);
    texts whose words do not line up with the original's afterwards are skipped. Reported: the share
    of words whose case is right before and after restoring, and of the capitalised mid-sentence
    words (mostly names) alone.
    """
    from engine.data.text import detokenize, normalize

    right_before = right_after = words = names = names_after = 0
    for original in originals:
        lowered = detokenize(normalize(original))
        restored = table.restore(lowered)
        truth, plain, fixed = WORD.findall(original), WORD.findall(lowered), WORD.findall(restored)
        if not (len(truth) == len(plain) == len(fixed)):
            continue
        capitalised_mid = [not m.group().islower() and not starts_sentence(original, m.start())
                           for m in WORD.finditer(original)]
        for word, before, after, is_name in zip(truth, plain, fixed, capitalised_mid, strict=True):
            words += 1
            right_before += before == word
            right_after += after == word
            names += is_name
            names_after += is_name and after == word
    return {"words": words, "case_right_before": right_before / max(words, 1),
            "case_right_after": right_after / max(words, 1), "capitalised_mid_sentence": names,
            "capitalised_restored": names_after / max(names, 1)}


def main(argv: Sequence[str] | None = None) -> None:
    """Learn a table from cased files and print its case accuracy on other cased files."""
    from engine.data.corpus import read_corpus

    parser = argparse.ArgumentParser(prog="python -m engine.data.truecase", description=main.__doc__)
    parser.add_argument("--learn", nargs="+", type=Path, required=True, help="cased corpus files to learn from")
    parser.add_argument("--test", nargs="+", type=Path, required=True, help="other cased corpus files to test on")
    parser.add_argument("--min-count", type=int, default=2)
    parser.add_argument("--min-share", type=float, default=0.5)
    args = parser.parse_args(argv)
    table = CaseTable.learn(read_corpus(args.learn), args.min_count, args.min_share)
    result = case_accuracy(read_corpus(args.test), table)
    print(f"table: {len(table)} words with capitals; test: {result['words']} words")
    print(f"case right: {result['case_right_before']:.2%} lowercased → {result['case_right_after']:.2%} restored; "
          f"capitalised mid-sentence words restored: {result['capitalised_restored']:.2%} "
          f"of {result['capitalised_mid_sentence']}")


if __name__ == "__main__":
    main()
