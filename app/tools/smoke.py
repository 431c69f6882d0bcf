"""Smoke test of a built app: open the window on the default bundled model, write a few tokens, exit.

    variorum-app --smoke-test        (the packaged build runs this offscreen after building)

Exit status 0 when the model loaded and every variant received text, 1 otherwise (with the reason).
"""

from __future__ import annotations

import sys

from PySide6.QtWidgets import QApplication

from app.tools.window import loaded_window, wait_until
from engine.api import RESOURCES_MODELS

SMOKE_BUNDLE = RESOURCES_MODELS / "roc-stories-tiny"
SMOKE_VARIANTS = 2
SMOKE_TOKENS = 8


def run_smoke_test() -> int:
    """Load SMOKE_BUNDLE in a real window, generate SMOKE_VARIANTS short variants; 0 when all got text."""
    qt = QApplication.instance() or QApplication(sys.argv[:1])  # noqa: F841 (must outlive the window)
    with loaded_window(SMOKE_BUNDLE) as (window, editor):
        editor.setPlainText("The old lighthouse keeper looked out at the sea and")
        window.controls.decode.set_values({"n": SMOKE_VARIANTS, "max_new_tokens": SMOKE_TOKENS,
                                           "seed_fixed": True, "seed": 1})
        if not window.generate():
            print(f"smoke test: generation did not start: {window.messages.label.text()}", file=sys.stderr)
            return 1
        wait_until(lambda: not window.generator.running)
        texts = window.variants.texts()
    if len(texts) != SMOKE_VARIANTS or not all(text.strip() for text in texts):
        print(f"smoke test: expected {SMOKE_VARIANTS} written variants, got {texts!r}", file=sys.stderr)
        return 1
    print(f"smoke test passed: {SMOKE_BUNDLE} wrote {len(texts)} variants: {texts!r}")
    return 0
