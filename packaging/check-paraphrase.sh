#!/usr/bin/env bash
# Check, in minutes, that a one-folder build carries what Paraphrase needs: build packaging/paraphrase_probe.py
# with the app's options for those parts (packaging/paraphrase-parts.sh, the same ones packaging/build.sh
# uses) into build/paraphrase-probe/, then run it there. torch, Qt and transformers stay out (the probe does
# not use them), so this takes a few minutes where the full build takes a quarter of an hour.
#
#   packaging/check-paraphrase.sh      (PYTHON=… picks another interpreter; default .venv/bin/python)
#
# Exits non-zero, with the probe's line naming the missing part, when the build or the probe fails.
set -euo pipefail
cd "$(dirname "$0")/.."
python="${PYTHON:-.venv/bin/python}"
started=$SECONDS
# shellcheck source=packaging/paraphrase-parts.sh
source packaging/paraphrase-parts.sh
"$python" -m PyInstaller --noconfirm --clean --log-level WARN --onedir --name paraphrase-probe \
  --distpath build/paraphrase-probe/dist --workpath build/paraphrase-probe/work \
  --specpath build/paraphrase-probe --paths "$PWD" "${paraphrase_parts[@]}" \
  --exclude-module torch --exclude-module transformers --exclude-module PySide6 \
  --exclude-module matplotlib --exclude-module tkinter --exclude-module pytest \
  packaging/paraphrase_probe.py
echo "check-paraphrase: probe built in $((SECONDS - started)) s"
build/paraphrase-probe/dist/paraphrase-probe/paraphrase-probe
