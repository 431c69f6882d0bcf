"""Tiny PermGen fixtures: a tokenizer and models of both layouts built from our own fixture stories (seconds on a
CPU), and a tiny random Llama language model bundle standing in for the pretrained base."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from engine.bundles.bundle import save_bundle
from engine.config import ModelConfig
from engine.decoding.settings import DecodeConfig
from engine.model import LanguageModel
from engine.permgen.beam_decode import BeamPermGenStream
from engine.permgen.config import PermGenConfig
from engine.permgen.control import OrderControl
from engine.permgen.data import tokenizer_texts
from engine.permgen.decode import PermGenStream, PermGenVariant
from engine.permgen.decoder_model import MARK_IDS, DecoderPermGenModel
from engine.permgen.marks import end_id, sentence_of_begin
from engine.permgen.model import PermGenModel
from engine.permgen.readers import read_examples
from engine.tokenizer import SPECIAL_TOKENS, VariorumTokenizer

FIXTURES = Path(__file__).parents[2] / "fixtures" / "permgen"
STORIES = FIXTURES / "stories.titlesepkeysepstory.txt"
# A Llama of SmolLM2's kind (grouped-query attention, SwiGLU, tied softmax), 2 × 32 wide; 160 positions hold
# the prefix (eos, 32 source tokens, eos) and 10 sentences of 12.
LLAMA = {"backbone": "llama", "n_layer": 2, "n_head": 4, "n_kv_head": 2, "n_embd": 32, "mlp_width": 48,
         "block_size": 160, "dropout": 0.0}


@pytest.fixture(scope="session")
def pg_tokenizer() -> VariorumTokenizer:
    return VariorumTokenizer.train(tokenizer_texts(read_examples(STORIES)), vocab_size=330)


def tiny_permgen_config(vocab_size: int, **model: object) -> PermGenConfig:
    settings: dict[str, object] = {"vocab_size": vocab_size, "backbone": "bart", "n_layer": 2, "n_head": 2,
                                   "n_embd": 32, "dropout": 0.0}
    settings.update(model)
    return PermGenConfig(model=ModelConfig(**settings), encoder_layers=1, max_source_len=32,  # type: ignore[arg-type]
                         max_sentence_len=12)


@pytest.fixture
def pg_model(pg_tokenizer: VariorumTokenizer) -> PermGenModel:
    torch.manual_seed(0)
    return PermGenModel(tiny_permgen_config(pg_tokenizer.vocab_size)).eval()


def tiny_decoder_config(vocab_size: int, **permgen: object) -> PermGenConfig:
    """A decoder-only PermGen config on the tiny Llama (`permgen`: PermGenConfig fields)."""
    return PermGenConfig(model=ModelConfig(vocab_size=vocab_size, **LLAMA), layout="decoder-only",  # type: ignore[arg-type]
                         max_source_len=32, max_sentence_len=12, **permgen)  # type: ignore[arg-type]


@pytest.fixture
def pg_decoder(pg_tokenizer: VariorumTokenizer) -> DecoderPermGenModel:
    torch.manual_seed(0)
    return DecoderPermGenModel(tiny_decoder_config(pg_tokenizer.vocab_size)).eval()


@pytest.fixture(scope="session")
def llama_base(tmp_path_factory: pytest.TempPathFactory, pg_tokenizer: VariorumTokenizer) -> Path:
    """A tiny random Llama language model bundle over the fixture tokenizer, its marks' rows at one point as an
    imported checkpoint's are: what the decoder-only layout fine-tunes."""
    torch.manual_seed(0)
    model = LanguageModel(ModelConfig(vocab_size=pg_tokenizer.vocab_size, **LLAMA)).eval()  # type: ignore[arg-type]
    with torch.no_grad():
        weight = model.backbone.token_embedding.weight
        weight[MARK_IDS] = weight[len(SPECIAL_TOKENS):].mean(dim=0)
    path = tmp_path_factory.mktemp("base") / "tiny-llama"
    save_bundle(path, model, pg_tokenizer, "# tiny Llama\n", {"train": {"train_files": []}})
    return path


def decode_story(model: DecoderPermGenModel, tokenizer: VariorumTokenizer, n: int, settings: DecodeConfig,
                 beam_width: int = 1, without: str = "") -> list[PermGenVariant]:
    """n stories of a cake in the order 2 3 1, sampled or searched (`beam_width` > 1); `without`: a rule the stream
    holds (its attribute, e.g. "ends") turned off, to show what the rule stops."""
    source, control = tokenizer.encode("Title: The cake\nKeywords: Mia\nStory:"), OrderControl(3, (2, 3, 1))
    stream = (BeamPermGenStream(model, tokenizer, source, n, settings, control, beam_width) if beam_width > 1
              else PermGenStream(model, tokenizer, source, n, settings, control))
    if without:
        setattr(stream, without, None)
    list(stream)
    return stream.candidates


def sentence_states(token_ids: list[int]) -> list[tuple[int, int]]:
    """Before each of a paragraph's tokens: the sentence being written (0 between sentences) and its words so far."""
    states, sentence, words = [], 0, 0
    for token in token_ids:
        states.append((sentence, words))
        if sentence_of_begin(token):
            sentence, words = sentence_of_begin(token), 0
        elif sentence and token == end_id(sentence):
            sentence = 0
        else:
            words += 1
    return states
