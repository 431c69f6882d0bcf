"""A prose model (`text_form` "prose"): it reads "Title: …\nKeywords: …\nStory:" and writes cased sentences, each
after a space, with no eos between source and target; its case table travels in its bundle, and training,
evaluation and the app encode the same source the same way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from engine.config import ConfigError, TrainConfig
from engine.data.truecase import CASE_FILE, CaseTable
from engine.decoding.settings import DecodeConfig
from engine.families import model_family
from engine.loaded_model import GenerationRequest
from engine.model import IGNORE_INDEX
from engine.permgen.bundle import load_permgen_bundle
from engine.permgen.config import PermGenConfig
from engine.permgen.decoder_model import DecoderPermGenModel, decoder_collate
from engine.permgen.heldout import encode_for_bundle
from engine.permgen.loaded import PermGenLoadedModel
from engine.permgen.marks import mark_target
from engine.permgen.model import START_ID, EncodedExample
from engine.permgen.paraphrase import ParaphraseStream
from engine.permgen.readers import read_examples
from engine.permgen.text import ProseForm, encode_sources
from engine.permgen.train import PermGenTrainer
from engine.tokenizer import VariorumTokenizer
from tests.engine.permgen.conftest import FIXTURES, STORIES, tiny_decoder_config

PROSE = ProseForm("story", True, CaseTable({"anna": "Anna"}))


def test_normalised_text_is_written_as_cased_prose() -> None:
    source = PROSE.source("the lost kite", ["anna", "wind", "do n't"])
    assert source == "Title: The lost kite\nKeywords: Anna, wind, don't"
    assert PROSE.joiner == "\nStory:" and ProseForm("abstract").joiner == "\nAbstract:"
    assert PROSE.sentence("so anna did n't fly her kite , i think .") == " So Anna didn't fly her kite, I think."
    assert ProseForm("story").sentence("anna flew .") == " Anna flew."  # no table: sentence starts only
    assert ProseForm("paraphrase").source("anna flew her kite .", ()) == "Paraphrase this sentence: Anna flew her kite."


def test_text_with_capitals_keeps_its_case() -> None:
    table = CaseTable({"black": "Black", "anna": "Anna"})
    cased = ProseForm("paraphrase", False, table)
    assert cased.sentence("The cat spun a black cord .") == " The cat spun a black cord."
    assert cased.sentence("anna spun a black cord .") == " Anna spun a Black cord."  # a lowercased set's sentence
    assert cased.source("Anna spun a black cord .", ()) == "Paraphrase this sentence: Anna spun a black cord."
    story = ProseForm("story", False, table)
    assert story.source("Anna 's black cat", ["anna", "Black"]) == "Title: Anna's black cat\nKeywords: Anna, Black"


def test_a_long_source_is_cut_before_its_joiner(pg_tokenizer: VariorumTokenizer) -> None:
    joiner = pg_tokenizer.encode(PROSE.joiner)
    long, short = PROSE.source("the lost kite " * 10, ["anna"]), PROSE.source("cake", [])
    room = len(pg_tokenizer.encode(short)) + len(joiner)  # the short one just fits
    (cut, whole), count = encode_sources(pg_tokenizer, [long, short], room, PROSE)
    assert len(cut) == room and cut[-len(joiner):] == joiner and count == 1
    assert whole == pg_tokenizer.encode(short) + joiner
    assert encode_sources(pg_tokenizer, [long], 12)[0][0] == pg_tokenizer.encode(long)[:12]  # normalised: no joiner


def test_the_prose_prefix_has_no_eos_between_source_and_target() -> None:
    example = EncodedExample([7, 8, 9], [[30, 31], [40]])
    batch = decoder_collate([example], [[2, 1]], joined=True)
    target = mark_target(example.sentences, [2, 1])
    assert batch.input_ids[0].tolist() == [0, 7, 8, 9, *target[:-1]]
    assert batch.targets[0].tolist() == [IGNORE_INDEX] * 3 + target  # the joiner's last piece predicts the first mark


def test_prose_is_for_decoder_only_stories_and_abstracts(pg_tokenizer: VariorumTokenizer) -> None:
    assert tiny_decoder_config(300, text_form="prose", task="abstract").text_form == "prose"
    with pytest.raises(ConfigError, match="text_form must be one of"):
        tiny_decoder_config(300, text_form="cased")
    with pytest.raises(ConfigError, match=r"is for a decoder-only model .* this one is encoder-decoder"):
        PermGenConfig(text_form="prose")
    with pytest.raises(ConfigError, match="give paraphrase_source \"instruction\", not 'sentence'"):
        tiny_decoder_config(300, text_form="prose", task="paraphrase")
    with pytest.raises(ConfigError, match="case_from restores the case"):
        tiny_decoder_config(300, case_from=["x.txt"])


def _train_prose(base: Path, out: Path, tokenizer: VariorumTokenizer) -> PermGenTrainer:
    train = TrainConfig(train_files=[str(STORIES)], out_dir=str(out), batch_size=2, max_steps=2, eval_every=2,
                        eval_batches=1, warmup_steps=0, lr=1e-2, device="cpu", init_from=str(base),
                        trainable="last-1", valid_fraction=0.0, compile=False)
    config = tiny_decoder_config(tokenizer.vocab_size, text_form="prose", case_from=[str(FIXTURES / "roc_valid.json")])
    trainer = PermGenTrainer(config, train, show_progress=False)
    trainer.run()
    return trainer


def test_training_evaluation_and_the_app_read_the_same_prose(llama_base: Path, pg_tokenizer: VariorumTokenizer,
                                                             tmp_path: Path) -> None:
    trainer = _train_prose(llama_base, tmp_path / "run", pg_tokenizer)
    directory = tmp_path / "run" / "bundle"
    assert trainer.prose is not None and trainer.prose.case is not None
    assert json.loads((directory / CASE_FILE).read_text())["forms"] == trainer.prose.case.forms
    examples = read_examples(STORIES)
    assert encode_for_bundle(load_permgen_bundle(directory), examples) == trainer._encode(examples)
    first = trainer.train_data[0]
    assert pg_tokenizer.decode(first.sentences[0]).startswith(" Anna flew")
    assert pg_tokenizer.decode(first.source).startswith("Title: The lost kite\nKeywords:")

    loaded = model_family("permgen").load(directory, torch.device("cpu"), "torch")
    assert isinstance(loaded, PermGenLoadedModel)
    request = GenerationRequest(task="story", title="the cake", n=2, num_sentences=3, sentence_order=[3, 1, 2],
                                decode=DecodeConfig(seed=1, max_new_tokens=5))
    source = loaded.source_ids(request)
    assert pg_tokenizer.decode(source).startswith("Title: The cake\nKeywords: ")
    assert source[-len(pg_tokenizer.encode("\nStory:")):] == pg_tokenizer.encode("\nStory:") and START_ID not in source
    assert loaded.case_table(request) is None  # it writes cased prose: the table would make "I'd" "I'D"
    variants = loaded.generate(request)
    assert [v.order for v in variants] == [[3, 1, 2], [3, 1, 2]]  # type: ignore[attr-defined]
    assert all(v.text == v.text.strip() for v in variants)


@pytest.mark.parametrize("beam", [1, 3])
def test_a_prose_paraphrase_reads_the_instruction_and_its_copy_limit_counts_the_sentence(
    pg_tokenizer: VariorumTokenizer, beam: int
) -> None:
    config = tiny_decoder_config(pg_tokenizer.vocab_size, text_form="prose", task="paraphrase",
                                 paraphrase_source="instruction")
    torch.manual_seed(0)
    model = DecoderPermGenModel(config).eval()
    prose = ProseForm("paraphrase", config.lowercase)
    passage = "Anna flew her kite. The wind took it."
    stream = ParaphraseStream(model, pg_tokenizer, passage, 3, DecodeConfig(seed=2, max_new_tokens=8, copy_limit=1),
                              beam, prose=prose)
    text = "Paraphrase this sentence: The wind took it."  # cut to 32 ids before its joiner by the tiny tokenizer
    assert stream.sources_ids[1] == encode_sources(pg_tokenizer, [text], 32, prose)[0][0]
    assert pg_tokenizer.decode(stream.sources_ids[1]).endswith("\nParaphrase:")
    copied = pg_tokenizer.encode(" The wind took it.")
    assert stream.copied_ids[1] == copied  # the sentence as the model writes it, not the instruction
    list(stream)
    assert all(v.text and v.text == v.text.strip() for v in stream.candidates)
