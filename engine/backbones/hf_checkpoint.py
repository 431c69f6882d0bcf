"""A local Hugging Face checkpoint (`variorum import`, `--init-from-hf`), loaded or refused with one line.

The weights file comes from anywhere: transformers reads `pytorch_model.bin` with torch's
`weights_only` unpickler, which refuses a tampered pickle (one that would run code) with a long
multi-paragraph error, and a damaged or foreign file fails in its own ways. Each becomes a
`ConfigError` naming the folder, so the trainers report it as bad input.
"""

from __future__ import annotations

import pickle
import warnings
from pathlib import Path
from typing import Any

from engine.config import ConfigError


def load_hf_pretrained(model_class: Any, directory: Path, family: str) -> Any:
    """`model_class.from_pretrained(directory)` offline, or a `ConfigError` saying why it cannot be used."""
    if not (directory / "config.json").is_file():
        raise ConfigError(f"{directory} is not a Hugging Face {family} checkpoint (no config.json)")
    from transformers.utils import logging as hf_logging

    verbosity, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()  # its loading report (missing weights) is answered below, in one line
    hf_logging.disable_progress_bar()  # nor its "Loading weights" bar: a refused import says one line
    try:
        with warnings.catch_warnings():  # torch warns about the pickle protocol of a file it may then refuse
            warnings.simplefilter("ignore")
            model, loading = model_class.from_pretrained(str(directory), local_files_only=True,
                                                         output_loading_info=True)
    except pickle.UnpicklingError:
        raise ConfigError(f"{directory}: its weights file holds more than tensors and plain data (tampered "
                          "with?) and was not loaded") from None
    except Exception as error:  # damaged or foreign files fail with transformers', torch's or safetensors' types
        reason = (str(error).strip().splitlines() or [type(error).__name__])[0][:160]
        raise ConfigError(f"{directory}: the {family} checkpoint cannot be loaded ({reason})") from None
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()
    missing = sorted(loading.get("missing_keys") or [])
    if missing:  # transformers fills them with random values: a model that only looks like the checkpoint
        raise ConfigError(f"{directory}: its weights lack {missing[0]} ({len(missing)} tensor(s) its config.json "
                          "asks for): config and weights do not belong together")
    return model
