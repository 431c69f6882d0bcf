"""Inside a one-folder build, check that Paraphrase's parts load and propose rewrites: exit 0 and say so,
else exit 1 with the missing part. packaging/check-paraphrase.sh builds this with the app's options for
those parts (packaging/paraphrase-parts.sh) and runs it, which takes minutes where the full app build takes
a quarter of an hour; it also runs from the repository (`python packaging/paraphrase_probe.py`)."""

from __future__ import annotations

import sys

from engine.pos.spacy_backend import SPACY_MODEL, load_spacy_pipeline
from engine.pos.tagger import TaggerUnavailableError
from engine.rewording import rewording_available
from engine.rewording.edits import word_edits
from engine.rewording.phrasing import phrasing_edits
from engine.rewording.wordnet import WordNet, WordNetMissingError

PASSAGE = "The children were happy because their father came home early."


def main() -> int:
    if not rewording_available():
        print("paraphrase probe: rewording_available() is False: WordNet's files, lemminflect, spaCy or its "
              "English model is missing", file=sys.stderr)
        return 1
    try:
        doc = load_spacy_pipeline(SPACY_MODEL, needed=())(PASSAGE)  # every component, the parser included
        wordnet = WordNet()
        wordnet.load()
        edits = word_edits(doc, wordnet) + phrasing_edits(doc)
    except (TaggerUnavailableError, WordNetMissingError, OSError, ImportError) as error:
        print(f"paraphrase probe: {error}", file=sys.stderr)
        return 1
    if not edits:
        print(f"paraphrase probe: no rewrite proposed for {PASSAGE!r}", file=sys.stderr)
        return 1
    first = edits[0]
    print(f"paraphrase probe: ok: {len(edits)} word edits proposed, e.g. {doc[first.index].text!r} → {first.text!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
