"""Decoding needs none of the optional packages: not the `pos` extra (spaCy, stanza, and rewording's
WordNet and lemminflect), not the `metrics` extra (jiwer, rouge-score), not the GUI (PySide6), not
the `finetune` extra (peft: a LoRA bundle holds plain factors). A GPU image without them runs
.ci/gpu-check, and a writer's install without them writes stories and continuations."""

from __future__ import annotations

import subprocess
import sys

OPTIONAL = ("spacy", "stanza", "jiwer", "rouge_score", "PySide6", "peft", "lemminflect", "wn")
DECODING_MODULES = ("engine.front_door", "engine.permgen.loaded", "engine.permgen.paraphrase", "engine.permgen.readers",
                    "engine.decoding.graphed_step", "engine.onnx.runtime", "engine.metrics.paraphrase",
                    "engine.rewording.stream")


def test_decoding_modules_import_without_the_optional_packages() -> None:
    blocked = "; ".join(f"sys.modules[{name!r}] = None" for name in OPTIONAL)  # `import name` then raises
    imports = "; ".join(f"import {module}" for module in DECODING_MODULES)
    subprocess.run([sys.executable, "-c", f"import sys; {blocked}; {imports}"], check=True)
