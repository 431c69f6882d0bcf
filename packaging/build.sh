#!/usr/bin/env bash
# Build the one-folder desktop app dist/Variorum/ with PyInstaller, then start it offscreen as a smoke test.
#
#   .ci/setup-venv package,pos && packaging/build.sh      (PYTHON=… picks another interpreter)
#
# The folder holds the Variorum executable, torch (whichever build the venv has), the bundled models
# (resources/models), what Paraphrase needs (spaCy and its English model, WordNet), the icon and
# variorum.desktop; the smoke test fails a build that cannot paraphrase. Exits non-zero when the build or
# the smoke test fails. packaging/check-paraphrase.sh checks Paraphrase's parts alone, in minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
python="${PYTHON:-.venv/bin/python}"
started=$SECONDS
# Paraphrase's parts (spaCy and its English model, WordNet's word lists, lemminflect) and wordfreq's English
# list, which Paraphrase and Real words only read: packaging/paraphrase-parts.sh.
# shellcheck source=packaging/paraphrase-parts.sh
source packaging/paraphrase-parts.sh
"$python" -m PyInstaller --noconfirm --clean --log-level WARN --onedir --name Variorum \
  --distpath dist --workpath build/pyinstaller --specpath build/pyinstaller --paths "$PWD" \
  --add-data "$PWD/resources/models:resources/models" --add-data "$PWD/resources/icons:resources/icons" \
  --add-data "$PWD/resources/licenses:resources/licenses" --add-data "$PWD/resources/scorers:resources/scorers" \
  "${paraphrase_parts[@]}" \
  --collect-submodules engine --collect-submodules app \
  --hidden-import transformers.models.gpt2 --hidden-import transformers.models.bart \
  --exclude-module matplotlib --exclude-module stanza --exclude-module tkinter \
  --exclude-module sacrebleu --exclude-module rouge_score --exclude-module jiwer --exclude-module pytest \
  app/__main__.py
cp packaging/variorum.desktop resources/icons/variorum.png dist/Variorum/
echo "build: dist/Variorum/ in $((SECONDS - started)) s, $(du -sh dist/Variorum | cut -f1)"
echo "smoke test: dist/Variorum/Variorum --smoke-test (offscreen)"
QT_QPA_PLATFORM=offscreen dist/Variorum/Variorum --smoke-test
