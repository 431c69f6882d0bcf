"""End at a sentence: a variant the length limit stopped is cut back to its last complete sentence."""

from __future__ import annotations

from engine.decoding.sentence_end import FINISH_SENTENCE, end_at_sentence, sentence_end_tokens
from engine.decoding.stream import Variant

PIECES = ["He", " saved", " money", ".", " He", " bought", " a", ' "car."', " Then", " he", " saved", " up", " to"]


def _decode(ids: list[int]) -> str:
    return "".join(PIECES[i] for i in ids)


def test_the_last_complete_sentence_is_kept_with_its_closing_quote() -> None:
    assert sentence_end_tokens(list(range(len(PIECES))), _decode) == 8
    assert sentence_end_tokens([0, 1, 2], _decode) == 0  # no complete sentence


def test_a_variant_stopped_mid_sentence_ends_at_its_last_full_sentence() -> None:
    ids = list(range(len(PIECES)))
    variant = Variant(0, 1, {}, ids, [-1.0] * len(ids), [0] * len(ids), _decode(ids), "length")
    whole = Variant(1, 2, {}, [0, 1, 2], [-1.0] * 3, [0] * 3, _decode([0, 1, 2]), "length")
    end_at_sentence([variant, whole], _decode)
    assert variant.text == 'He saved money. He bought a "car."' and variant.finish_reason == FINISH_SENTENCE
    assert len(variant.token_ids) == len(variant.token_log_probs) == len(variant.token_groups) == 8
    assert whole.text == "He saved money" and whole.finish_reason == "length"  # nothing to cut back to
