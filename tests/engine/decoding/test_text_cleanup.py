"""Generated text never holds control characters (every family), and a continuation's double quotation marks
pair up: cleaned as it streams, so the text is exactly its deltas, and the same as cleaning it whole."""

from __future__ import annotations

import random

import pytest
import torch

from engine.decoding.generate import VariantStream
from engine.decoding.sentence_end import FINISH_SENTENCE
from engine.decoding.settings import DecodeConfig
from engine.decoding.step import LanguageModelRows
from engine.decoding.text_cleanup import GeneratedText, drop_control_characters
from engine.decoding.token_sampler import Draw
from engine.model import LanguageModel
from engine.tokenizer import VariorumTokenizer

CONTROL = "\x10"


def test_control_and_invisible_characters_are_dropped_and_line_breaks_kept() -> None:
    text = "A\x00b\x10c\x7f\x85d\r\n\te\u202ef\ufeffg\ufdd0h\U0001fffei\ufffd😀"
    assert drop_control_characters(text) == "Abcd\n\tefghi😀"


@pytest.mark.parametrize(("context", "written", "kept"), [
    ("", 'She said, "Wait, please."" Then she left.', 'She said, "Wait, please." Then she left.'),
    ("", "“We love dogs!\"\" he said.", "“We love dogs!” he said."),
    ("", "“Run!” “Now!”", "“Run!” “Now!”"),
    ('He said, "Go', ' now," and left.', ' now," and left.'),  # closes the writer's open quotation
    ("", "Then it ended.” She smiled.", "Then it ended. She smiled."),  # nothing open to close
    ("", "“One “two” three.", "“One two” three."),
    ("", '"One.\n"Two."', '"One.\n"Two."'),  # a new paragraph reopens
    ("", 'Kept open: "so', 'Kept open: "so'),
    ("", "It's Tom's 'book'.", "It's Tom's 'book'."),
])
def test_quotation_marks_pair_up(context: str, written: str, kept: str) -> None:
    assert GeneratedText(context).add(written) == kept


def test_cleaning_as_it_streams_is_cleaning_it_whole() -> None:
    rng = random.Random(0)
    alphabet = ['"', "“", "”", "a", " ", ".", "\n", CONTROL, "!"]
    for _ in range(500):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(20)))
        cuts = sorted(rng.sample(range(len(text) + 1), min(3, len(text) + 1)))
        pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
        streamed = GeneratedText("“")
        assert "".join(streamed.add(piece) for piece in pieces) == GeneratedText("“").add(text), pieces


class ScriptedStream(VariantStream):
    """A language model stream whose rows write a fixed text, as a model that learned it would."""

    script: list[int]

    def _chosen(self, draw: Draw, rows: LanguageModelRows, step: int) -> tuple[torch.Tensor, torch.Tensor]:
        token = self.script[min(step, len(self.script)) - 1]
        return torch.full_like(draw.tokens, token), draw.groups


def _scripted(model: LanguageModel, tokenizer: VariorumTokenizer, prompt: str, written: str,
              **settings: object) -> tuple[list[str], ScriptedStream]:
    script = tokenizer.encode(written)
    config = DecodeConfig(seed=0, max_new_tokens=len(script), **settings)  # type: ignore[arg-type]
    stream = ScriptedStream(model, tokenizer, tokenizer.encode(prompt), 2, config)
    stream.script = script
    deltas = ["", ""]
    for event in stream:
        deltas[event.variant] += event.text_delta
    return deltas, stream


def test_a_continuation_drops_control_bytes_and_pairs_its_quotes(tiny_model: LanguageModel,
                                                                  tokenizer: VariorumTokenizer) -> None:
    deltas, stream = _scripted(tiny_model, tokenizer, "She asked.", f' "Come{CONTROL} in, please."" Then{CONTROL}.')
    assert [variant.text for variant in stream.variants] == deltas == [' "Come in, please." Then.'] * 2


def test_a_continuation_cut_at_its_last_sentence_is_cleaned_too(tiny_model: LanguageModel,
                                                                tokenizer: VariorumTokenizer,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(VariantStream, "_allowed", lambda self, last: None)  # the script decides the end
    _, stream = _scripted(tiny_model, tokenizer, 'He said, "Go', f' home{CONTROL}."" She went', end_at_sentence=True)
    assert [(v.text, v.finish_reason) for v in stream.variants] == [(' home."', FINISH_SENTENCE)] * 2
