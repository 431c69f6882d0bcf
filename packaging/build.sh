#!/usr/bin/env bash
# Build the one-folder desktop app dist/Variorum/ with PyInstaller, then start it offscreen as a smoke test.
#
#   .ci/setup-venv package,pos && packaging/build.sh      (PYTHON=… picks another interpreter)
#
# The folder holds the Variorum executable, torch (whichever build the venv has), the bundled models
# (resources/models), the icon and variorum.desktop. Exits non-zero when the build or the smoke test fails.
set -euo pipefail
cd "$(dirname "$0")/.."
python="${PYTHON:-.venv/bin/python}"
started=$SECONDS
# Real words only (engine/word_sources.py) reads wordfreq's large English list; the package's other
# languages (~55 MB) stay out. langcodes, which wordfreq asks for the language, reads its own data.
wordfreq_data="$("$python" -c 'import pathlib, wordfreq; print(pathlib.Path(wordfreq.__file__).parent / "data")')"
# The engine imports some modules lazily (per-head and per-task code), so all of engine/ and app/
# are collected; training-only and optional tagging packages are left out to keep the folder small.
"$python" -m PyInstaller --noconfirm --clean --log-level WARN --onedir --name Variorum \
  --distpath dist --workpath build/pyinstaller --specpath build/pyinstaller --paths "$PWD" \
  --add-data "$PWD/resources/models:resources/models" --add-data "$PWD/resources/icons:resources/icons" \
  --add-data "$PWD/resources/licenses:resources/licenses" \
  --add-data "$wordfreq_data/large_en.msgpack.gz:wordfreq/data" --collect-data langcodes \
  --collect-submodules engine --collect-submodules app \
  --hidden-import transformers.models.gpt2 --hidden-import transformers.models.bart \
  --exclude-module matplotlib --exclude-module spacy --exclude-module stanza --exclude-module tkinter \
  --exclude-module sacrebleu --exclude-module rouge_score --exclude-module jiwer --exclude-module pytest \
  app/__main__.py
cp packaging/variorum.desktop resources/icons/variorum.png dist/Variorum/
echo "build: dist/Variorum/ in $((SECONDS - started)) s, $(du -sh dist/Variorum | cut -f1)"
echo "smoke test: dist/Variorum/Variorum --smoke-test (offscreen)"
QT_QPA_PLATFORM=offscreen dist/Variorum/Variorum --smoke-test
