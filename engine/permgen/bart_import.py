"""A BART checkpoint (`BartForConditionalGeneration`) as a PermGen model over its renumbered vocabulary.

The import keeps the checkpoint as it is, so that what a writer imports is the model they had:
its encoder (token embedding, learned source positions, embedding layer norm, layers), its decoder
layers and embedding layer norm, its learned decoder positions, and its output layer, which BART
ties to the shared token embedding (our softmax head tied the same way). The shared table's rows
move with the renumbering (engine/checkpoints/vocabulary.py: eos takes `</s>`, pad `<pad>`, the
sentence marks are new rows at the mean). The result computes the checkpoint's logits for every
one of its tokens under the new ids (checked in the tests against transformers' model).

Because BART's decoder positions are absolute, the bundle says `positions: "absolute"` (the plain
BART decoder of PermGen's seq2seq baseline). Its decoder table has `max_target_len` =
10 · max_sentence_len + 1 rows taken from the checkpoint's rows 2.. (HF BART's offset of 2), so
`max_sentence_len` is the largest that fits the checkpoint's `max_position_embeddings`
(102 for BART-base's 1,024). `variorum train-permgen --init-from` then fine-tunes it into
PermGen's hierarchical positions (engine/permgen/start.py).

Defaults of the bundle: task "story" (fine-tuning sets the task), cased text (`lowercase` False:
BART's vocabulary is cased, and lowercasing would waste half of it), natural order (`permute`
False, as for any absolute-position model).

Refused with one `CheckpointError` line: what our backbone does not run, i.e. an activation other
than BART's exact GELU, scaled embeddings, encoder and decoder of different attention heads or
feed-forward widths, an output layer not tied to the token embedding, a nonzero
`final_logits_bias` (a buffer transformers never trains, zero in BART's checkpoints: our head has
no bias), and the pre-norm / final-norm layouts of converted fairseq configs.
"""

from __future__ import annotations

from typing import Any

import torch
from transformers import BartForConditionalGeneration

from engine.backbones.hf_checkpoint import load_hf_pretrained
from engine.checkpoints.inspect import CheckpointError, CheckpointInfo
from engine.checkpoints.vocabulary import import_vocabulary, move_rows
from engine.config import ModelConfig
from engine.permgen.config import PermGenConfig
from engine.permgen.model import PermGenModel
from engine.tokenizer import MAX_SENTENCES, VariorumTokenizer

IMPORTED_TASK = "story"
MIN_SENTENCE_LEN = 3  # ⟨B-t⟩, one token, ⟨E-t⟩
# Options of fairseq-converted configs that transformers' BART ignores, with the value BART runs as;
# a checkpoint with another value was trained as another architecture.
FAIRSEQ_LAYOUT = {"normalize_before": False, "add_final_layer_norm": False, "add_bias_logits": False,
                  "static_position_embeddings": False, "normalize_embedding": True}


def _check_options(info: CheckpointInfo, bart: BartForConditionalGeneration) -> None:
    hf: Any = bart.config
    problems = []
    if hf.activation_function != "gelu":
        problems.append(f"activation {hf.activation_function!r} is not BART's GELU")
    if hf.scale_embedding:
        problems.append("scale_embedding is set (our backbone adds token embeddings unscaled)")
    if hf.encoder_attention_heads != hf.decoder_attention_heads or hf.encoder_ffn_dim != hf.decoder_ffn_dim:
        problems.append(f"encoder and decoder differ ({hf.encoder_attention_heads} / {hf.decoder_attention_heads} "
                        f"heads, {hf.encoder_ffn_dim} / {hf.decoder_ffn_dim} feed-forward widths)")
    if not hf.tie_word_embeddings:
        problems.append("its output layer is not tied to the token embedding")
    problems += [f"{name} is {getattr(hf, name)!r}" for name, value in FAIRSEQ_LAYOUT.items()
                 if getattr(hf, name, value) != value]
    if bool(bart.final_logits_bias.any()):
        problems.append("final_logits_bias is not zero (our output layer has no bias)")
    if (hf.max_position_embeddings - 1) // MAX_SENTENCES < MIN_SENTENCE_LEN:
        problems.append(f"{hf.max_position_embeddings} decoder positions are too few for {MAX_SENTENCES} sentences")
    if problems:
        raise CheckpointError(f"{info.path}: {problems[0]}; Variorum runs BART as bart-base defines it")


def _config(bart: BartForConditionalGeneration, vocab_size: int) -> PermGenConfig:
    """The PermGen config of the checkpoint's sizes (see the module docstring for the rest)."""
    hf: Any = bart.config
    model = ModelConfig(vocab_size=vocab_size, n_layer=hf.decoder_layers, n_head=hf.decoder_attention_heads,
                        n_embd=hf.d_model, dropout=float(hf.dropout), backbone="bart", head="softmax",
                        tie_embeddings=True)
    return PermGenConfig(model=model, encoder_layers=hf.encoder_layers, ffn_dim=hf.encoder_ffn_dim,
                         max_source_len=hf.max_position_embeddings,
                         max_sentence_len=(hf.max_position_embeddings - 1) // MAX_SENTENCES,
                         permute=False, task=IMPORTED_TASK, lowercase=False, positions="absolute")


def import_bart(info: CheckpointInfo) -> tuple[PermGenModel, VariorumTokenizer]:
    """The checkpoint as a plain-BART PermGen model over its renumbered vocabulary, and that tokenizer.

    Every tensor comes from the checkpoint, so the same files always give bit-identical weights."""
    if info.family != "bart":
        raise CheckpointError(f"{info.path}: a {info.architecture} checkpoint, not BART")
    vocabulary = import_vocabulary(info)
    bart = load_hf_pretrained(BartForConditionalGeneration, info.path, "BART").float()
    _check_options(info, bart)
    config = _config(bart, len(vocabulary.source_rows))
    with torch.random.fork_rng(devices=[]):  # the random start is overwritten; keep the caller's RNG untouched
        torch.manual_seed(0)
        model = PermGenModel(config)
    theirs, ours = bart.model, model.backbone
    shared = move_rows(theirs.shared.weight.detach(), vocabulary.source_rows)  # [V_new, D]
    encoder = {**theirs.encoder.state_dict(), "embed_tokens.weight": shared}  # the encoder reads the shared table
    positions = theirs.decoder.embed_positions
    offset = int(getattr(positions, "offset", 2))  # HF BART keeps 2 unused rows before position 0
    assert ours.decoder.embed_positions is not None  # positions="absolute"
    rows = ours.decoder.embed_positions.num_embeddings  # max_target_len ≤ max_position_embeddings
    with torch.no_grad():
        ours.shared.weight.copy_(shared)
        ours.encoder.load_state_dict(encoder)
        ours.decoder.embed_positions.weight.copy_(positions.weight[offset : offset + rows])  # [rows, D]
        ours.decoder.layernorm_embedding.load_state_dict(theirs.decoder.layernorm_embedding.state_dict())
        ours.decoder.layers.load_state_dict(theirs.decoder.layers.state_dict())
    return model, vocabulary.tokenizer
