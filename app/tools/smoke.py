"""Smoke test of a built app: open the window, continue a text with a bundled model, write a story with
the bundled story model, paraphrase a sentence (where rewording's packages are installed; a packaged
build must have them), exit.

    variorum-app --smoke-test        (the packaged build runs this offscreen after building)

Exit status 0 when the models loaded, every variant received text and a paraphrase changed the sentence,
1 otherwise (with the reason).
Each line it prints names the model and what ran it (torch, or ONNX Runtime where the bundle has an
export and the package is present), so a build without onnxruntime shows up as "torch".
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from PySide6.QtWidgets import QApplication

from app.controls.modes import MODES
from app.tools.window import loaded_window, wait_until
from engine.front_door import RESOURCES_MODELS
from engine.rewording import rewording_available

if TYPE_CHECKING:
    from app.main_window import MainWindow

SMOKE_BUNDLE = RESOURCES_MODELS / "roc-stories-tiny"
STORY_BUNDLE = RESOURCES_MODELS / "permgen-story"
SMOKE_VARIANTS = 2
SMOKE_TOKENS = 8
PASSAGE = "The children were happy because their father came home early."


def run_smoke_test() -> int:
    """Continue a text with SMOKE_BUNDLE, write a story in Story mode, paraphrase PASSAGE; 0 when all worked."""
    if getattr(sys, "frozen", False) and not rewording_available():  # a one-folder build must paraphrase
        print("smoke test: this build cannot paraphrase: WordNet's files, lemminflect, spaCy or its English model "
              "was left out of it (packaging/paraphrase-parts.sh)", file=sys.stderr)
        return 1
    qt = QApplication.instance() or QApplication(sys.argv[:1])  # noqa: F841 (must outlive the window)
    with loaded_window(SMOKE_BUNDLE) as (window, editor):
        editor.setPlainText("The old lighthouse keeper looked out at the sea and")
        if not _written(window, "continue"):
            return 1
        if STORY_BUNDLE.is_dir():
            window.controls.mode.title_edit.setText("The lighthouse")
            if not (_picked(window, "story") and _written(window, "story")):
                return 1
        if rewording_available():
            editor.setPlainText(PASSAGE)
            editor.selectAll()
            if not (_picked(window, "paraphrase") and _written(window, "paraphrase")):
                return 1
            if all(text == PASSAGE for text in window.variants.texts()):
                print("smoke test: paraphrase: every variant is the passage unchanged", file=sys.stderr)
                return 1
    return 0


def _picked(window: MainWindow, mode: str) -> bool:
    """Pick `mode` as a writer does and wait for its model; False (with the reason) when it does not load."""
    picker = window.controls.mode.picker
    picker.setCurrentIndex(MODES.index(mode))
    picker.activated.emit(MODES.index(mode))
    wait_until(lambda: (window.model is not None and mode in window.model.capabilities.tasks)
               or "Could not load" in window.messages.label.text())
    if window.model is None or mode not in window.model.capabilities.tasks:
        print(f"smoke test: no {mode} model loaded: {window.messages.label.text()}", file=sys.stderr)
        return False
    return True


def _written(window: MainWindow, mode: str) -> bool:
    """Generate SMOKE_VARIANTS short variants in the current mode and print them; False (with the reason) when
    generation did not start or a variant got no text."""
    window.controls.decode.set_values({"n": SMOKE_VARIANTS, "max_new_tokens": SMOKE_TOKENS, "seed_fixed": True,
                                       "seed": 1})
    if not window.generate():
        print(f"smoke test: {mode} did not start: {window.messages.label.text()}", file=sys.stderr)
        return False
    wait_until(lambda: not window.generator.running)
    texts = window.variants.texts()
    if len(texts) != SMOKE_VARIANTS or not all(text.strip() for text in texts):
        print(f"smoke test: {mode}: expected {SMOKE_VARIANTS} written variants, got {texts!r}", file=sys.stderr)
        return False
    assert window.model is not None  # it generated
    print(f"smoke test passed: {mode} with {window.controls.model.picker.currentText()} ({window.model.runtime}) "
          f"wrote {len(texts)} variants: {texts!r}")
    return True
