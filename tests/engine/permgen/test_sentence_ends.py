"""A prose model's sentence ends at its first full stop and holds no line break, sampled or searched; a normalised
model is left as it was."""

from __future__ import annotations

import re

import pytest
import torch

from engine.data.text import is_abbreviation
from engine.decoding.settings import DecodeConfig
from engine.permgen.control import OrderControl
from engine.permgen.decode import PermGenStream
from engine.permgen.decoder_model import DecoderPermGenModel
from engine.permgen.marks import end_id
from engine.permgen.sentence_ends import SentenceEnds, sentence_ends
from engine.tokenizer import VariorumTokenizer
from tests.engine.permgen.conftest import decode_story, tiny_decoder_config

# more words after a sentence-final mark (and its closing marks) that ends no abbreviation
_WRITES_ON = re.compile(r"(\S*[.!?])[\"')\]]*\s+\S")


def _writes_past_its_end(sentence: str) -> bool:
    return "\n" in sentence or any(not is_abbreviation(m.group(1)) for m in _WRITES_ON.finditer(sentence))


@pytest.fixture
def prose_decoder(pg_tokenizer: VariorumTokenizer) -> DecoderPermGenModel:
    torch.manual_seed(0)
    return DecoderPermGenModel(tiny_decoder_config(pg_tokenizer.vocab_size, text_form="prose")).eval()


def test_a_sentence_has_ended_after_a_full_stop_that_ends_no_abbreviation(pg_tokenizer: VariorumTokenizer) -> None:
    ends = SentenceEnds(pg_tokenizer)
    assert sorted(pg_tokenizer.token_text(i) for i in ends.closers) == sorted(['"', "'", ")", "]"])
    for text in ("She ran.", 'He said "no."', "Really?!", "Wait...", "(it fell!)", "'Go,' she said."):
        assert _texts(pg_tokenizer, ends.after(text)) == [], text  # only the end mark
    assert _texts(pg_tokenizer, ends.after('He said "no.')) == ['"']
    assert _texts(pg_tokenizer, ends.after("(It fell [twice].")) == [")"]
    assert _texts(pg_tokenizer, ends.after("He said 'don't.")) == ["'"]
    for text in ("She ran", "He met Mr.", "They left the U.S.", "e.g.", "one, two"):
        assert ends.after(text) is None, text
    after_digit = ends.after("It grew 3.")
    assert after_digit is not None and bool(after_digit[pg_tokenizer.encode("5")[0]])  # "3.5" stays whole
    assert not any(pg_tokenizer.token_text(int(i)).startswith(" ") for i in after_digit.nonzero()[:, 0])  # a new word


def _texts(tokenizer: VariorumTokenizer, mask: torch.Tensor | None) -> list[str]:
    assert mask is not None
    return [tokenizer.token_text(int(i)) for i in mask.nonzero()[:, 0]]


def test_restrict_ends_a_sentence_only_after_its_stop_and_bans_line_breaks(pg_tokenizer: VariorumTokenizer) -> None:
    ends, vocab = SentenceEnds(pg_tokenizer), pg_tokenizer.vocab_size + 2  # two padding ids past the pieces
    allowed = torch.ones(3, vocab, dtype=torch.bool)
    sentences = [pg_tokenizer.encode(" She ran."), pg_tokenizer.encode(" She ran"), None]
    restricted = ends.restrict(allowed, sentences, [end_id(1), end_id(2), 0])
    assert allowed.all()  # not changed in place
    assert restricted[0].nonzero()[:, 0].tolist() == [end_id(1)]
    assert not restricted[1, pg_tokenizer.encode("\n")[0]] and not restricted[1, end_id(2)]  # no end before a stop
    assert int(restricted[1].sum()) == vocab - int(ends.line_breaks.sum()) - 1
    assert restricted[2].all()  # a row choosing its next mark is left alone


@pytest.mark.parametrize("beam", [False, True])
def test_prose_sentences_end_at_their_first_full_stop(prose_decoder: DecoderPermGenModel,
                                                      pg_tokenizer: VariorumTokenizer, beam: bool) -> None:
    with torch.no_grad():  # a model that likes to end a sentence and to break lines, as a pretrained base does
        weight = prose_decoder.head.proj.weight
        for text in (" .", "\n", "."):
            weight[pg_tokenizer.encode(text)[-1]] *= 4
    settings, n, width = DecodeConfig(seed=3, max_new_tokens=10, temperature=1.5), 2 if beam else 8, 3 if beam else 1
    unruled = [s for v in decode_story(prose_decoder, pg_tokenizer, n, settings, width, "ends")
               for s in v.sentences.values()]
    assert any(_writes_past_its_end(s) for s in unruled)  # what the rule stops
    variants = decode_story(prose_decoder, pg_tokenizer, n, settings, width)
    sentences = [s for v in variants for s in v.sentences.values()]
    assert all(v.order == [2, 3, 1] for v in variants) and len(sentences) == 3 * len(variants)
    assert not any(_writes_past_its_end(s) for s in sentences), sentences


def test_only_prose_models_are_held_to_it(pg_decoder: DecoderPermGenModel, prose_decoder: DecoderPermGenModel,
                                          pg_tokenizer: VariorumTokenizer) -> None:
    source, settings = pg_tokenizer.encode("title : a"), DecodeConfig(seed=0)
    assert PermGenStream(pg_decoder, pg_tokenizer, source, 1, settings, OrderControl(1)).ends is None
    assert PermGenStream(prose_decoder, pg_tokenizer, source, 1, settings, OrderControl(1)).ends is sentence_ends(
        pg_tokenizer)
