"""The model card (`card.md`) written into every trained bundle: data, steps, time, hardware, metrics."""

from __future__ import annotations

import os
import platform
import shlex
from pathlib import Path
from typing import Any

import torch

from engine.config import ModelConfig
from engine.model import LanguageModel


def portable_path(path: str) -> str:
    """`path` as a card shows it: relative to the directory the command ran in (a card copied to another
    machine must not carry this machine's absolute paths), or `~/…` for a path in the home folder outside it
    (the user data folder: the same on every writer's machine); relative paths are kept as given."""
    where = Path(path)
    if not where.is_absolute():
        return path
    home, here = Path.home(), Path.cwd()
    if where.is_relative_to(home) and not where.is_relative_to(here):
        return str(Path("~") / where.relative_to(home))
    return os.path.relpath(path)


def portable_command(command: str) -> str:
    """`command` with every absolute path argument (also `--flag=/abs/path`) made relative by `portable_path`."""
    def fix(word: str) -> str:
        flag, eq, value = word.partition("=")
        return flag + eq + portable_path(value) if eq and value.startswith("/") else portable_path(word)
    return " ".join(shlex.quote(fix(word)) for word in shlex.split(command))


def trained_steps(provenance: dict[str, Any]) -> int:
    """Optimizer steps the bundle's weights had: max_steps, or fewer when early stopping ended the run."""
    return int(provenance["summary"].get("step") or provenance["train"]["max_steps"])


def steps_line(provenance: dict[str, Any]) -> str:
    """The card's step count, saying so when early stopping ended the run before max_steps."""
    steps = trained_steps(provenance)
    if not provenance["summary"].get("stopped_early"):
        return str(steps)
    patience = provenance["train"]["early_stop_patience"]
    return f"{steps} (stopped early: no better validation loss in {patience} evaluations)"


def speed_line(summary: dict[str, Any]) -> str:
    """How the run computed and how fast it trained (step time only, validation not counted)."""
    precision = {"bf16": "bf16 autocast (float32 weights)"}.get(summary.get("precision", ""), "float32")
    return f"{precision}, {summary.get('tokens_per_s', 0.0):,.0f} target tokens/s"


def hardware_description(device: torch.device, world: int) -> str:
    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
    else:
        name = f"CPU ({platform.processor() or platform.machine()}, {os.cpu_count()} cores)"
    return f"{world} x {name}, torch {torch.__version__}"


def _start_line(provenance: dict[str, Any]) -> str:
    """Where the weights started: random (a small model: say what to expect) or a bundle, and what trained."""
    start = provenance["train"].get("init_from")
    if not start:
        return ("It is small: expect fluent-looking but often incoherent text, best on material like its "
                "training data.")
    trained = provenance.get("trainable", {})
    part = (f" It trained {trained['parameters']:,} of its {trained['of']:,} parameters (`{trained['setting']}`)."
            if trained else "")
    return f"Fine-tuned from the bundle `{portable_path(start)}`.{part}"


def _backbone_words(config: ModelConfig) -> str:
    return "A Llama-family decoder (RMSNorm, rotary positions, SwiGLU)" if config.backbone == "llama" \
        else "A GPT-2-style decoder"


def _heads_words(config: ModelConfig) -> str:
    kv = f" sharing {config.kv_heads} key/value heads" if config.kv_heads != config.n_head else ""
    return f"{config.n_head} heads{kv}"


def render_card(model: LanguageModel, provenance: dict[str, Any], device: torch.device, world: int) -> str:
    """Markdown card; every number in it comes from this run (the command is recorded)."""
    train = provenance["train"]
    summary = provenance["summary"]
    config = model.config
    data_lines = "\n".join(f"- `{portable_path(d['path'])}` (sha256 `{d['sha256'][:16]}…`)" for d in provenance["data"])
    steps = trained_steps(provenance)
    sequence = train.get("seq_len") or config.block_size
    tokens = steps * train["batch_size"] * sequence
    minutes = summary.get("train_seconds", 0.0) / 60
    return f"""# Variorum language model

**What it is.** {_backbone_words(config)} ({model.num_parameters() / 1e6:.2f}M parameters:
{config.n_layer} layers, {config.n_embd} wide, {_heads_words(config)}, context {config.block_size} tokens,
{config.vocab_size}-token byte-level BPE) with a `{config.head}` output head (termination `{config.termination}`),
trained with the `{train['objective']}` objective by Variorum's own pipeline. {_start_line(provenance)}

## Data
{data_lines}

Documents: {provenance['documents']['train']} for training, {provenance['documents']['valid']} held out
for validation (split by a hash of each document's text, fraction {train['valid_fraction']}).

## Training
- Steps: {steps_line(provenance)} x batch {train['batch_size']} x {sequence} tokens = {tokens:,} tokens seen
- Optimiser: AdamW, lr {train['lr']} (warmup {train['warmup_steps']}, cosine to {train['min_lr']}),
  weight decay {train['weight_decay']}, grad clip {train['grad_clip']}, seed {train['seed']}
- Time: {minutes:.1f} min on {hardware_description(device, world)}
- Precision: {speed_line(summary)}

## Metrics
- Validation loss {summary.get('valid_loss', float('nan')):.4f} nats/token, perplexity
  **{summary.get('valid_ppl', float('nan')):.2f}** (per BPE token, at step {summary.get('step')}).

Reproduce with:

```
{portable_command(provenance['command'])}
```

and re-measure the validation perplexity of this bundle with
`variorum perplexity --bundle <this directory> --files <the data files above>`.
"""
