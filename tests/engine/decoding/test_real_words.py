"""Real words only: mask maths on hand-built pieces; every head, family and decoder writes only allowed words."""

from __future__ import annotations

import pytest
import torch

from engine.data.text import WORD
from engine.decoding import DecodeConfig, VariantStream
from engine.decoding.real_words import (
    AllowedWords,
    RealWordRows,
    TokenPieces,
    WordSpeller,
    split_piece,
    trailing_partial,
)
from engine.heads.base import OutputHead
from engine.metrics.invented import words_after
from engine.tokenizer import VariorumTokenizer
from tests.engine.decoding.test_golden_decoding import LM_HEADS, golden_tokenizer, lm_model

CPU = torch.device("cpu")
# A hand-built vocabulary: id 0 is eos (a boundary), id 1 another special token; b"\xc3" is half of "é".
PIECES: list[bytes | None] = [None, None, b"h", b"e", b"l", b"o", b"he", b"llo", b" ", b".", b" he", b"\xc3",
                              b"lo. ", b"o-he", b"\xc3\xa9", b"H", b"", b"x"]
WORDS = AllowedWords(["hello", "he", "hell", "h\u00e9"])


def speller(words: AllowedWords = WORDS, pieces: list[bytes | None] = PIECES) -> WordSpeller:
    return WordSpeller(TokenPieces(pieces, [0]), words, CPU)


def brute_force(partial: str, piece: bytes | None, words: AllowedWords) -> bool:
    """The rule read off the text: every word the piece ends is allowed, the word it leaves open can still be."""
    if piece is None:
        return False
    try:
        text = partial + piece.decode("utf-8")
    except UnicodeDecodeError:
        return False
    runs = list(WORD.finditer(text))
    return all((words.is_prefix(r.group().casefold()) if r.end() == len(text) else r.group().casefold() in words)
               for r in runs)


@pytest.mark.parametrize(("text", "lead", "inner", "tail", "separated"), [
    ("ing", "ing", (), "", False), (" the", "", (), "the", True), (".", "", (), "", True),
    ("n't", "n", (), "t", True), ("a-b-c", "a", ("b",), "c", True), ("", "", (), "", False),
    ("Caf\u00c9", "caf\u00e9", (), "", False), ("lo. ", "lo", (), "", True), ("2x", "", (), "x", True),
])
def test_a_piece_splits_as_the_invented_word_rate_splits_words(
    text: str, lead: str, inner: tuple[str, ...], tail: str, separated: bool
) -> None:
    split = split_piece(text)
    assert (split.lead, split.inner, split.tail, split.separated) == (lead, inner, tail, separated)


@pytest.mark.parametrize("partial", ["", "h", "he", "hel", "hell", "hello", "h\u00e9"])
def test_masks_follow_the_rule_on_hand_built_pieces(partial: str) -> None:
    mask = speller().mask(partial)
    expected = [brute_force(partial, piece, WORDS) for piece in PIECES]
    expected[0] = partial == "" or partial in WORDS  # eos ends the word: only a complete one
    assert mask.tolist() == expected


def test_a_word_needing_a_blocked_piece_falls_back_to_ending_the_word() -> None:
    # "hé" needs the whole "é" piece; without it, "h" can only become "he"... drop those too: no way on.
    pieces: list[bytes | None] = [None, b"h", b"\xc3", b"\xa9", b" "]
    mask = speller(AllowedWords(["h\u00e9"]), pieces).mask("h")
    assert mask.tolist() == [True, False, False, False, True]  # eos and the separator: the decode can end


def test_masks_match_the_rule_on_a_trained_tokenizer(tokenizer: VariorumTokenizer) -> None:
    words = AllowedWords(["mara", "found", "the", "dog", "a", "bone", "it", "was", "happy", "don", "t"])
    pieces = tokenizer.piece_bytes()
    spell = WordSpeller(TokenPieces(pieces, [tokenizer.eos_id]), words, CPU)
    for partial in ["", "m", "ma", "mar", "mara", "do", "bon", "happ"]:
        expected = [brute_force(partial, piece, words) for piece in pieces]
        expected[tokenizer.eos_id] = partial == "" or partial in words
        assert spell.mask(partial).tolist() == expected, partial


def test_partials_follow_the_tokens_and_the_rows() -> None:
    spell = speller()
    rows = RealWordRows(spell, ["", "hel", "he"])
    rows.advance([6, 4, 9])  # "he", "l", "."
    assert rows.partials == ["he", "hell", ""]
    rows.select([2, 0, 0])
    assert rows.partials == ["", "he", "he"]
    assert spell.partial_after("", [15, 3, 12, 10]) == "he"  # "H" "e" "lo. " " he": "hello" ended, "he" open
    assert spell.after("hel", 0) == "" and spell.after("hel", 1) == "hel"  # eos ends; a blocked id adds nothing


def test_allowed_ands_a_decoders_mask_without_touching_it() -> None:
    rows = RealWordRows(speller(), ["", "hel"])
    restriction = torch.zeros(2, len(PIECES), dtype=torch.bool)
    restriction[0, 9] = True  # row 0: only "." — allowed after "" too
    restriction[1, 8] = True  # row 1: only " " — never allowed after "hel": the row keeps the restriction
    before = restriction.clone()
    allowed = rows.allowed(restriction)
    assert torch.equal(restriction, before)
    assert allowed[0].nonzero().flatten().tolist() == [9]
    assert allowed[1].nonzero().flatten().tolist() == [8]
    assert rows.speller.mask("hel")[8].item() is False  # the cached mask is unchanged


def test_the_start_partial_is_the_prompts_last_open_word() -> None:
    assert trailing_partial("Jenny wanted to le") == "le"
    assert trailing_partial("Jenny wanted to ") == "" == trailing_partial("bread.")


def _lm_speller(tokenizer: VariorumTokenizer, texts: list[str]) -> WordSpeller:
    words = AllowedWords(w for text in texts for w in WORD.findall(text))
    return WordSpeller(TokenPieces(tokenizer.piece_bytes(), [tokenizer.eos_id]), words, CPU)


def assert_only_allowed_words(text: str, prompt: str, finish_reason: str, words: AllowedWords) -> int:
    """Every word of `text` (read after `prompt`) is allowed, but for a last word left open by the length
    cap (no single token could close it), which is at least a prefix of one. Returns the word count."""
    found = words_after(prompt, text)
    cut = finish_reason == "length" and trailing_partial(text) != ""
    assert all(w in words for w in (found[:-1] if cut else found)), found
    assert not cut or words.is_prefix(found[-1])
    return len(found)


@pytest.mark.parametrize("head", sorted(LM_HEADS))
@pytest.mark.parametrize("decoding", [{"top_p": 0.9}, {"greedy": True}, {"flat_sampling": True, "top_k": 30}],
                         ids=["nucleus", "greedy", "flat"])
def test_every_head_writes_only_allowed_words(head: str, decoding: dict[str, object]) -> None:
    tokenizer = golden_tokenizer()
    model = lm_model(tokenizer, LM_HEADS[head][0])
    spell = _lm_speller(tokenizer, ["the dog ran to the park and a boy sat by the tree", "Mara found it."])
    settings = DecodeConfig(max_new_tokens=40, seed=3, real_words=True, **decoding)  # type: ignore[arg-type]
    prompt = "The dog"
    stream = VariantStream(model, tokenizer, tokenizer.encode(prompt), 3, settings, words=spell)
    list(stream)
    counts = [assert_only_allowed_words(tokenizer.decode(v.token_ids), prompt, v.finish_reason, spell.words)
              for v in stream.variants]
    assert all(v.finish_reason in ("eos", "length") for v in stream.variants)
    if not settings.greedy:  # the untrained model's argmax is punctuation; its samples hold words
        assert sum(counts) >= 3


def test_the_last_step_closes_the_open_word() -> None:
    spell = speller()
    assert spell.mask("hel", closing=True).nonzero().flatten().tolist() == [4, 12]  # "l" → hell, "lo. " → hello.
    # "he" is a word: eos, "llo" (hello), " ", ".", " he" and the empty piece leave every word whole
    assert spell.mask("he", closing=True).nonzero().flatten().tolist() == [0, 7, 8, 9, 10, 16]
    assert spell.mask("xq", closing=True).tolist() == spell.mask("xq").tolist()  # nothing closes it: the open mask


@pytest.mark.parametrize("head_name", sorted(LM_HEADS))
def test_each_heads_allowed_mass_matches_asking_every_group(head_name: str) -> None:
    """The one-projection overrides (F², POSG, termination) equal the default that asks each group for its tokens."""
    tokenizer = golden_tokenizer()
    head = lm_model(tokenizer, LM_HEADS[head_name][0]).head
    torch.manual_seed(1)
    hidden, steps = torch.randn(3, 32), torch.tensor([1, 5, 30])
    allowed = torch.rand(3, head.vocab_size) < 0.3
    allowed[1] = False
    allowed[1, :3] = True  # row 1: eos and two specials only, so most groups hold none of it
    with torch.no_grad():
        fast = head.allowed_group_mass(hidden, steps, allowed)
        reference = OutputHead.allowed_group_mass(head, hidden, steps, allowed)
    torch.testing.assert_close(fast, reference, atol=1e-4, rtol=1e-4)
