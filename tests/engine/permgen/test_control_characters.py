"""A PermGen sentence never keeps a control character its model writes: not in the streamed text, not in the
sentence kept for the paragraph."""

from __future__ import annotations

from engine.decoding.settings import DecodeConfig
from engine.permgen.control import OrderControl
from engine.permgen.decode import PermGenStream
from engine.permgen.marks import begin_id, end_id
from engine.permgen.model import PermGenModel
from engine.tokenizer import VariorumTokenizer


def test_permgen_sentences_drop_control_bytes(pg_model: PermGenModel,
                                              pg_tokenizer: VariorumTokenizer) -> None:
    settings = DecodeConfig(seed=0, max_new_tokens=12)
    stream = PermGenStream(pg_model, pg_tokenizer, pg_tokenizer.encode("title : a"), 1, settings,
                           OrderControl(num_sentences=1))
    tokens = [begin_id(1), *pg_tokenizer.encode("The\x10 cat\x10."), end_id(1)]
    streamed = "".join(stream._write(0, token) for token in tokens)
    assert streamed == "The cat." and stream.candidates[0].sentences[1] == "The cat."
