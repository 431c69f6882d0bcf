"""Take the README screenshot with our own window under QT_QPA_PLATFORM=offscreen.

    QT_QPA_PLATFORM=offscreen python -m app.tools.screenshot [--bundle DIR] [--out resources/screenshot.png]

Loads the bundle (the bundled Continue model by default), writes a prompt, generates 4 variants with a fixed
seed, colours them by how common each word is, and saves the window at 1280×800 (its default size) as a PNG.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtWidgets import QApplication

from app.tools.window import loaded_window, wait_until
from engine.front_door import RESOURCES_MODELS

PROMPT = "The Lost Key\n\nMaria searched the whole house for the key to her grandmother's old box."
OUT = Path(__file__).resolve().parents[2] / "resources" / "screenshot.png"


def take(bundle: Path, out: Path, width: int = 1280, height: int = 800) -> None:
    qt = QApplication.instance() or QApplication([])  # noqa: F841 (must stay alive)
    with loaded_window(bundle, (width, height)) as (window, editor):
        editor.setPlainText(PROMPT)
        editor.moveCursor(editor.textCursor().MoveOperation.End)
        window.controls.decode.set_values({"n": 4, "max_new_tokens": 60, "seed_fixed": True, "seed": 7,
                                           "temperature": 0.9, "top_p": 0.95})
        window.generate()
        wait_until(lambda: not window.generator.running)
        window.variants.colour_mode.setCurrentIndex(window.variants.colour_mode.findData("frequency"))
        wait_until(lambda: True)
        window.statusBar().clearMessage()  # its speed reflects the machine that took the picture, not the app
        out.parent.mkdir(parents=True, exist_ok=True)
        if not window.grab().save(str(out)):
            sys.exit(f"could not write {out}")
    print(f"wrote {out}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bundle", type=Path, default=RESOURCES_MODELS / "continue-f2-nmst")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    if not (args.bundle / "config.json").is_file():
        parser.error(f"no model bundle at {args.bundle}")
    take(args.bundle, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
