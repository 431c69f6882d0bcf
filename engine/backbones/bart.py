"""BART-style encoder-decoder built from transformers' BART modules, with hierarchical decoder positions.

Used by PermGen (engine/permgen, paper §4.1). The encoder is transformers' `BartEncoder` unchanged
(learned absolute source positions). The decoder is a stack of `BartDecoderLayer`s under our own
input embedding (paper Eq. 4):

    Y = Y_token + Y_global_position + Y_local_position

global = index t of the sentence holding the token (0 for tokens outside every sentence: the
decoder start token and ⟨EOP⟩), local = position inside that sentence (⟨B-t⟩ is 0). There is no
absolute decoder position at all, so a sentence generated first or last is embedded the same way.
The two new tables have **no padding_idx**: the authors' code built them with padding_idx = 1,
which froze sentence 1 / local position 1 at a zero vector (docs/architecture.md, "PermGen"); here every row trains.

`positions="absolute"` builds plain BART instead (the seq2seq baseline of PermGen Table 2):
Y = Y_token + Y_position with a learned table over the decoder input index 0, 1, 2, …
(past length + offset while decoding incrementally); the sentence / local tables do not exist
and the (sentence, local) arguments are ignored. No offset rows (HF BART reserves two).

Like `GPT2Backbone`, the backbone stops at hidden states; the output layer is a separate head
(engine.heads), tied to the shared token embedding. Attention masks are built here as additive
float masks [B, 1, Tq, Tk], so eager and SDPA attention behave the same.
"""

from __future__ import annotations

import torch
from torch import nn
from transformers import BartConfig
from transformers.cache_utils import DynamicCache, EncoderDecoderCache
from transformers.models.bart.modeling_bart import BartDecoderLayer, BartEncoder

from engine.config import ConfigError


def bart_config(
    vocab_size: int,
    d_model: int,
    encoder_layers: int,
    decoder_layers: int,
    heads: int,
    ffn_dim: int,
    max_source_len: int,
    dropout: float,
    pad_id: int,
) -> BartConfig:
    """The transformers config of a backbone (special ids inside our vocabulary, never downloaded)."""
    config = BartConfig(
        vocab_size=vocab_size,
        d_model=d_model,
        encoder_layers=encoder_layers,
        decoder_layers=decoder_layers,
        encoder_attention_heads=heads,
        decoder_attention_heads=heads,
        encoder_ffn_dim=ffn_dim,
        decoder_ffn_dim=ffn_dim,
        max_position_embeddings=max_source_len,
        dropout=dropout,
        attention_dropout=dropout,
        activation_dropout=dropout,
        pad_token_id=pad_id,
        bos_token_id=0,
        eos_token_id=0,
        decoder_start_token_id=0,
        forced_eos_token_id=None,
        scale_embedding=False,
    )
    config._attn_implementation = "sdpa"
    return config


def _setting(value: int | float | None) -> int:
    """A BartConfig size that must be set (transformers types them as optional)."""
    if value is None:
        raise ConfigError("BART config is missing a size")
    return value  # type: ignore[return-value]  # float settings pass through unchanged


def _additive(allowed: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """bool [B, 1, Tq, Tk] (True = may attend) → additive float mask (0 or dtype min)."""
    zero = torch.zeros((), dtype=dtype, device=allowed.device)
    return torch.where(allowed, zero, torch.finfo(dtype).min)


def self_attention_mask(key_mask: torch.Tensor, query_len: int, dtype: torch.dtype) -> torch.Tensor:
    """Causal + key-padding mask: key_mask bool [B, K] (K = past + query_len) → [B, 1, Tq, K]."""
    keys = key_mask.shape[1]
    past = keys - query_len
    q = torch.arange(query_len, device=key_mask.device)[:, None] + past  # absolute query index [Tq, 1]
    k = torch.arange(keys, device=key_mask.device)[None, :]  # [1, K]
    allowed = (k <= q)[None, None] & key_mask[:, None, None, :]
    return _additive(allowed, dtype)


def cross_attention_mask(source_mask: torch.Tensor, query_len: int, dtype: torch.dtype) -> torch.Tensor:
    """Source padding mask bool [B, S] → [B, 1, Tq, S]."""
    allowed = source_mask[:, None, None, :].expand(-1, 1, query_len, -1)
    return _additive(allowed, dtype)


class HierarchicalDecoder(nn.Module):
    """BART decoder layers under token + sentence-index + in-sentence-position embeddings."""

    def __init__(
        self, config: BartConfig, embed_tokens: nn.Embedding, max_sentences: int, max_local: int,
        absolute_positions: int = 0,
    ) -> None:
        """`absolute_positions` > 0: plain BART with that many learned decoder positions instead."""
        super().__init__()
        d_model, std = _setting(config.d_model), float(_setting(config.init_std))
        self.embed_tokens = embed_tokens
        self.embed_sentence: nn.Embedding | None = None
        self.embed_local: nn.Embedding | None = None
        self.embed_positions: nn.Embedding | None = None
        if absolute_positions > 0:
            self.embed_positions = nn.Embedding(absolute_positions, d_model)
            tables = [self.embed_positions]
        else:
            # Row 0 of `embed_sentence` = outside any sentence (start token, ⟨EOP⟩); rows 1..T = sentence t.
            self.embed_sentence = nn.Embedding(max_sentences + 1, d_model)
            self.embed_local = nn.Embedding(max_local, d_model)
            tables = [self.embed_sentence, self.embed_local]
        for table in tables:
            nn.init.normal_(table.weight, std=std)
        self.layernorm_embedding = nn.LayerNorm(d_model)
        layers = _setting(config.decoder_layers)
        self.layers = nn.ModuleList([BartDecoderLayer(config, layer_idx=i) for i in range(layers)])
        self.dropout = float(_setting(config.dropout))

    @property
    def hierarchical(self) -> bool:
        """True for PermGen's hierarchical positions, False for plain BART absolute positions."""
        return self.embed_positions is None

    def check_positions(self, sentence: torch.Tensor, local: torch.Tensor, past_len: int) -> None:
        """ValueError when an input of sentence, local [B, T] after `past_len` inputs has no row in the
        position tables (every runner checks this before a step, engine/permgen/runner.py)."""
        if self.embed_positions is not None:
            if past_len + sentence.shape[1] > self.embed_positions.num_embeddings:
                raise ValueError(f"decoder input of {past_len + sentence.shape[1]} tokens; absolute positions "
                                 f"cover at most {self.embed_positions.num_embeddings}")
            return
        assert self.embed_sentence is not None and self.embed_local is not None
        too_far = int(sentence.max()) >= self.embed_sentence.num_embeddings
        if too_far or int(local.max()) >= self.embed_local.num_embeddings:
            raise ValueError(
                f"hierarchical position out of range: sentence index < {self.embed_sentence.num_embeddings}, "
                f"in-sentence position < {self.embed_local.num_embeddings} required"
            )

    def embed(self, ids: torch.Tensor, sentence: torch.Tensor, local: torch.Tensor, past_len: int = 0) -> torch.Tensor:
        """Eq. 4: ids, sentence, local [B, T] → [B, T, D] (before the embedding layer norm).

        Absolute mode: token + position (past_len + 0..T-1); `sentence` and `local` are unused.
        """
        if not torch.compiler.is_compiling():
            # reading the largest position is a graph break in a compiled training step, whose positions
            # come from `collate` and are in range by construction; eager runs (decoding, tests) check
            self.check_positions(sentence, local, past_len)
        tokens: torch.Tensor = self.embed_tokens(ids)
        if self.embed_positions is not None:
            positions = torch.arange(past_len, past_len + ids.shape[1], device=ids.device)  # [T]
            absolute: torch.Tensor = tokens + self.embed_positions(positions)[None]
            return absolute
        assert self.embed_sentence is not None and self.embed_local is not None
        embedded: torch.Tensor = tokens + self.embed_sentence(sentence) + self.embed_local(local)
        return embedded

    def forward(
        self,
        ids: torch.Tensor,  # [B, T]
        sentence: torch.Tensor,  # [B, T] global positions
        local: torch.Tensor,  # [B, T] local positions
        encoder_states: torch.Tensor,  # [B, S, D]
        source_mask: torch.Tensor,  # bool [B, S]
        key_mask: torch.Tensor | None = None,  # bool [B, past + T]; None = no decoder padding
        past: EncoderDecoderCache | None = None,
    ) -> torch.Tensor:
        past_len = past.get_seq_length() if past is not None else 0
        hidden = self.layernorm_embedding(self.embed(ids, sentence, local, past_len))
        hidden = nn.functional.dropout(hidden, p=self.dropout, training=self.training)
        if key_mask is None:
            key_mask = torch.ones(ids.shape[0], past_len + ids.shape[1], dtype=torch.bool, device=ids.device)
        self_mask = self_attention_mask(key_mask, ids.shape[1], hidden.dtype)
        cross_mask = cross_attention_mask(source_mask, ids.shape[1], hidden.dtype)
        for layer in self.layers:
            hidden = layer(hidden, self_mask, encoder_states, encoder_attention_mask=cross_mask,
                           past_key_values=past, use_cache=past is not None)
        out: torch.Tensor = hidden
        return out


class BartBackbone(nn.Module):
    """Source ids → encoder states; decoder ids + hierarchical positions → hidden states [B, T, D]."""

    def __init__(self, config: BartConfig, max_sentences: int, max_local: int, absolute_positions: int = 0) -> None:
        super().__init__()
        self.hf_config = config
        vocab, d_model = _setting(config.vocab_size), _setting(config.d_model)
        self.shared = nn.Embedding(vocab, d_model, padding_idx=config.pad_token_id)
        nn.init.normal_(self.shared.weight, std=float(_setting(config.init_std)))
        with torch.no_grad():
            self.shared.weight[config.pad_token_id].zero_()  # the pad token is never an input that matters
        self.encoder = BartEncoder(config)
        self.encoder.embed_tokens = self.shared  # type: ignore[assignment]  # tied, as in BartModel
        self.decoder = HierarchicalDecoder(config, self.shared, max_sentences, max_local, absolute_positions)

    @property
    def token_embedding(self) -> nn.Embedding:
        return self.shared

    def encode(self, source_ids: torch.Tensor, source_mask: torch.Tensor) -> torch.Tensor:
        """source_ids, source_mask [B, S] → encoder states [B, S, D]."""
        if source_ids.shape[1] > self.hf_config.max_position_embeddings:
            raise ValueError(
                f"source has {source_ids.shape[1]} tokens, the encoder takes at most "
                f"{self.hf_config.max_position_embeddings}"
            )
        out = self.encoder(inputs_embeds=self.shared(source_ids), attention_mask=source_mask.long())
        states: torch.Tensor = out.last_hidden_state
        return states

    def new_cache(self) -> EncoderDecoderCache:
        """An empty KV cache for incremental decoding (self- and cross-attention)."""
        return EncoderDecoderCache(DynamicCache(), DynamicCache())
