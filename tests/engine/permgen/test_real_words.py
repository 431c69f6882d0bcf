"""Real words only in PermGen: sampled and beam sentences, paraphrases, the marks ending words, the bundle's words."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

from engine.bundles.words import main as bundle_words_main
from engine.data.truecase import CaseTable
from engine.decoding.real_words import AllowedWords, TokenPieces, WordSpeller
from engine.decoding.settings import DecodeConfig
from engine.front_door import Engine, GenerationRequest
from engine.permgen.beam_decode import BeamPermGenStream
from engine.permgen.control import OrderControl
from engine.permgen.decode import PermGenStream
from engine.permgen.loaded import permgen_boundary_ids
from engine.permgen.model import PermGenModel
from engine.permgen.paraphrase import ParaphraseStream
from engine.tokenizer import VariorumTokenizer
from engine.word_sources import WORDS_FILE, read_bundle_words
from tests.engine.cli.test_recipes import CASED
from tests.engine.decoding.test_real_words import assert_only_allowed_words
from tests.engine.permgen.test_paraphrase import PASSAGE, para_bundle, para_model  # noqa: F401  (fixtures)

ALLOWED = AllowedWords(["the", "cake", "was", "good", "tom", "baked", "a", "it", "he", "ate", "and", "mia", "n", "t"])


def speller(tok: VariorumTokenizer) -> WordSpeller:
    return WordSpeller(TokenPieces(tok.piece_bytes(), permgen_boundary_ids(tok)), ALLOWED, torch.device("cpu"))


@pytest.mark.parametrize("beam", [0, 3])
@pytest.mark.parametrize("decode", [{"top_p": 0.95}, {"temperature": 1.5}], ids=["nucleus", "hot"])
def test_story_sentences_hold_only_allowed_words(
    pg_model: PermGenModel, pg_tokenizer: VariorumTokenizer, beam: int, decode: dict[str, float]
) -> None:
    settings = DecodeConfig(seed=2, max_new_tokens=12, real_words=True, **decode)  # type: ignore[arg-type]
    source = pg_tokenizer.encode("title : the cake keywords : mia")
    control = OrderControl(num_sentences=3)
    words = speller(pg_tokenizer)
    stream: PermGenStream = (PermGenStream(pg_model, pg_tokenizer, source, 3, settings, control, words=words)
                             if beam == 0 else
                             BeamPermGenStream(pg_model, pg_tokenizer, source, 3, settings, control, beam, words=words))
    list(stream)
    count = 0
    for variant in stream.candidates:
        for sentence in variant.sentences.values():  # each sentence ends at ⟨E-t⟩: a cut one may stay open
            count += assert_only_allowed_words(sentence, "", "length", ALLOWED)
    assert count >= 3


@pytest.mark.parametrize("beam", [1, 2])
def test_paraphrases_hold_only_allowed_words(para_model: PermGenModel, pg_tokenizer: VariorumTokenizer,  # noqa: F811
                                             beam: int) -> None:
    settings = DecodeConfig(seed=4, max_new_tokens=8, real_words=True)
    stream = ParaphraseStream(para_model, pg_tokenizer, PASSAGE, 2, settings, beam, words=speller(pg_tokenizer))
    list(stream)
    for outputs in stream.outputs:
        for text in outputs:
            assert_only_allowed_words(text, "", "length", ALLOWED)


def test_trainers_write_the_training_words_and_the_command_rebuilds_them(
    para_bundle: Path, tmp_path: Path  # noqa: F811
) -> None:
    written = read_bundle_words(para_bundle)
    assert written is not None and {"we", "train", "diversity", "cpu"} <= written  # from its training file
    copy = tmp_path / "bundle"
    shutil.copytree(para_bundle, copy)
    (copy / WORDS_FILE).unlink()
    assert bundle_words_main(["--bundle", str(copy)]) == 0
    assert read_bundle_words(copy) == written and CaseTable.read(copy) is None
    assert bundle_words_main(["--bundle", str(copy), "--case-from", str(CASED)]) == 0
    table = CaseTable.read(copy)
    assert read_bundle_words(copy) == written and table is not None and table.forms == {"ben": "Ben", "sam": "Sam"}
    model = Engine(search_dirs=[]).load(copy, device="cpu")
    assert model.real_words().has_training_words
    request = GenerationRequest(task="paraphrase", prompt="Zorblax baked a cake.", n=2,
                                decode=DecodeConfig(seed=1, max_new_tokens=6, real_words=True))
    speller_ = model.speller(request)
    assert speller_ is not None and "zorblax" in speller_.words and written <= speller_.words.members
    assert len(model.generate(request)) == 2
