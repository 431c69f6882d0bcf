"""The model card of a PermGen bundle; every number in it comes from the run (its command is recorded)."""

from __future__ import annotations

from typing import Any

import torch

from engine.permgen.config import PermGenConfig
from engine.permgen.network import PermGenNetwork
from engine.pos.vocab import UNSEEN_GROUP
from engine.training.card import portable_command, portable_path, speed_line, steps_line

SMALL_DATA_NOTE = {
    "abstract": "AGENDA here is only its 2,000 validation + test abstracts (the train split is missing), "
                "so an abstract model trained on it is small and weak; say so to writers.",
    "story": "Only the ROCStories Plan-and-Write dev/test files carry titles and storylines here (the "
             "98k-story train split is missing), so story models see at most ~20k stories.",
    "paraphrase": "Paraphrase pairs here are ParaSCI-ACL (28,883 train pairs of scientific sentences), the "
                  "ParaSCI-arXiv val/test splits and MRPC's positive pairs (2,753 in train); the arXiv train "
                  "split and QQP / ParaNMT are missing, so a paraphrase model is small and domain-bound.",
}


def _what(task: str) -> str:
    if task == "paraphrase":
        return "rewrites a sentence as a paraphrase (a passage sentence by sentence)"
    return f"writes a {task} from a title and keywords, sentence by sentence in a chosen or model-chosen order"


def _random_order_line(task: str, summary: dict[str, Any]) -> str:
    if task == "paraphrase":  # one target sentence: every order is the natural one
        return "- (one target sentence, so there is no other sentence order to score)"
    permuted = summary.get("valid_nll_permuted", float("nan"))
    return f"- NLL per target token, one random order per paragraph: {permuted:.4f}"


def _pairs_note(config: PermGenConfig, data: dict[str, Any]) -> str:
    """How many paraphrase pairs the rephrasing filter dropped (engine/permgen/rephrasings.py); else ""."""
    if not config.filters_pairs:
        return ""
    floor = ", read only in the directions the meaning floor would show" if config.pair_within_floor else ""
    return (f"; kept only pairs that rephrase (content kept ≥ {config.pair_min_content_kept}, word similarity "
            f"≤ {config.pair_max_similarity}{floor}), dropping {data.get('dropped_pairs', 0)}")


def _network(model: PermGenNetwork[Any], train: dict[str, Any]) -> str:
    """What the model is, in a few words: the layout, its sizes and what the run trained."""
    config, size = model.config, f"{model.num_parameters() / 1e6:.2f}M parameters"
    if config.layout == "decoder-only":
        start = train.get("init_from", "")
        how = (f"fine-tuned from `{portable_path(start)}` (trainable {train.get('trainable', 'all')}, and the "
               "sentence marks' rows)") if start else "trained from random weights"
        return (f"A decoder-only Llama ({size}: {config.model.n_layer} layers, width {config.model.n_embd}, "
                f"{config.model.head} head) reading the source as a prefix, {how},")
    return (f"A small BART-style encoder-decoder ({size}: {config.encoder_layers} encoder + {config.model.n_layer} "
            f"decoder layers, width {config.model.n_embd}, {config.model.head} head)")


def _head_note(model: PermGenNetwork[Any], provenance: dict[str, Any]) -> str:
    """A paragraph on the POSG head (what V_ρ came from, what the loss and the numbers are); else ""."""
    tags = model.config.model.pos_tags
    if model.config.model.head != "posg":
        return ""
    unseen = ", one for tokens never seen in training" if UNSEEN_GROUP in tags else ""
    tagger = provenance.get("pos_tagger", "an unrecorded tagger")
    return (
        "\n**POS head.** POS-guided softmax (Yang et al., 2022): the model picks a POS tag, then a token "
        f"among the tokens seen with that tag. Its {len(tags)} groups (PTB tags, one for the sentence marks "
        f"and other special tokens{unseen}) and their token sets come from the training targets, tagged "
        f"sentence by sentence by {tagger} on the lowercased, tokenized text. Training loss: Eq. 4 "
        "(−log p(tag) − log p(token | tag), observed tags) summed over each target as in PermGen's Eq. 7. "
        "The held-out numbers below use the marginal p(token) = Σ_tag p(tag) p(token | tag).\n"
    )


def render_permgen_card(model: PermGenNetwork[Any], provenance: dict[str, Any], device: torch.device) -> str:
    config = model.config
    train, summary, data = provenance["train"], provenance["summary"], provenance["data"]
    method = "PermGen (π-SGD over sentence orders)" if config.permute else "no-permute baseline (natural order only)"
    if config.positions == "absolute":
        method += ", absolute decoder positions (plain BART)"
    if config.task == "paraphrase":
        method = "sentence → paraphrase seq2seq (one marked target sentence)"
    if config.layout == "decoder-only":
        method += ", decoder-only (a language model reading the source as a prefix)"
    files = "\n".join(f"- `{portable_path(f)}`" for f in data["files"])
    return f"""# Variorum {config.task} model: {method}

**What it is.** {_network(model, train)} that {_what(config.task)} (Yu et al., PermGen). {SMALL_DATA_NOTE[config.task]}
{_head_note(model, provenance)}
## Data
{files}

Read {data['read']} {"pairs" if config.task == "paraphrase" else "paragraphs"}; dropped \
{data['dropped_too_many_sentences']} with more than 10 sentences; \
cut {data['cut_sentences']} long sentences and {data['cut_sources']} long sources{_pairs_note(config, data)}. \
Examples: \
{provenance['examples']['train']} train, {provenance['examples']['valid']} held out.

## Training
{steps_line(provenance)} steps × batch {train['batch_size']}, lr {train['lr']}, seed {train['seed']}, \
on {device.type}, {summary.get('train_seconds', 0.0) / 60:.1f} minutes; {speed_line(summary)}.

## Held-out numbers (from this run)
- NLL per target token, natural order: {summary.get('valid_nll_natural', float('nan')):.4f} \
(perplexity {summary.get('valid_ppl_natural', float('nan')):.2f})
{_random_order_line(config.task, summary)}

Command: `{portable_command(provenance['command'])}`
"""
