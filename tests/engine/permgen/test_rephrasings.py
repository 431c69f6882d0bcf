"""Selecting the paraphrase pairs that rephrase: content kept and word similarity by hand, config checks,
and the trainer dropping the other pairs before its held-out split."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from engine.config import ConfigError, ModelConfig, TrainConfig
from engine.data.paragraphs import ParagraphExample
from engine.permgen.config import PermGenConfig
from engine.permgen.paraphrase_readers import read_parasci
from engine.permgen.rephrasings import (
    content_kept,
    rephrasing_pairs,
    selected_pairs,
    within_floor,
    word_similarity,
)
from engine.permgen.train import PermGenTrainer
from engine.tokenizer import VariorumTokenizer
from tests.engine.permgen.conftest import FIXTURES, tiny_permgen_config

PAIRS = FIXTURES / "paraphrase" / "fixture.src.txt"
SOURCE = "The cat sat on the mat ."
REWRITE = "A cat sat on a rug ."
# The meaning floor keeps the first rewrite of each: moved words both ways; a dropped name in neither direction
# (forward it loses a name, backward it brings one in); a new claim in neither direction.
MOVED = ("The old farmer sold his brown horse at the market last week .",
         "Last week , the old farmer sold his brown horse at the market .")
NAME_DROPPED = ("Yesterday Anna and her brother walked slowly home from the busy school .",
                "Yesterday her brother walked slowly home from the busy school .")
NEW_CLAIM = ("The old farmer sold his brown horse .", "The old farmer bought a new red car in town .")


def test_content_kept_counts_the_sources_distinct_content_words_found_again() -> None:
    # content words: cat, sat, mat (articles, "on" and "." are light); the rewrite has cat, sat
    assert content_kept(SOURCE, REWRITE) == pytest.approx(2 / 3)
    # tagger, assigns, part, speech, every, word: all but "assigns" come back
    assert content_kept("the tagger assigns a part of speech to every word .",
                        "every word receives a part of speech tag from the tagger .") == pytest.approx(5 / 6)
    assert content_kept("The CAT sat .", "the cat SAT .") == 1.0  # compared in lowercase
    assert content_kept("The and a .", "Something else entirely .") == 1.0  # nothing to keep


def test_word_similarity_is_twice_the_matched_words_over_both_lengths() -> None:
    # 7 + 7 words; "cat sat on" and "." match: 2 · 4 / 14
    assert word_similarity(SOURCE, REWRITE) == pytest.approx(8 / 14)
    assert word_similarity(SOURCE, SOURCE.upper()) == 1.0
    assert word_similarity("a b", "c d") == 0.0


def test_the_filter_drops_copies_and_loose_pairs_and_keeps_rephrasings() -> None:
    copy = ParagraphExample(SOURCE, (), (SOURCE,))
    loose = ParagraphExample(SOURCE, (), ("Dogs bark at night .",))
    rephrased = ParagraphExample(SOURCE, (), ("On the mat , the cat sat .",))
    pairs = [copy, loose, rephrased]
    assert rephrasing_pairs(pairs, 0.6, 0.8) == [rephrased]
    assert rephrasing_pairs(pairs, 0.0, 1.0) == pairs  # the defaults keep every pair, copies too
    assert rephrasing_pairs(pairs, 0.0, 0.8) == [loose, rephrased]


def test_only_a_paraphrase_config_selects_pairs_and_its_bounds_are_checked() -> None:
    config = tiny_permgen_config(50)
    assert not config.filters_pairs
    with pytest.raises(ConfigError, match="task 'story' has none"):
        dataclasses.replace(config, pair_max_similarity=0.8)
    with pytest.raises(ConfigError, match=r"pair_min_content_kept must be in \[0, 1\], got 1.5"):
        PermGenConfig(model=ModelConfig(backbone="bart"), task="paraphrase", pair_min_content_kept=1.5)
    story = [ParagraphExample("a title", (), ("One sentence .", "Two ."))]
    assert selected_pairs(story, config) == story


def test_the_trainer_keeps_only_rephrasings_and_counts_the_rest(tmp_path: Path,
                                                                pg_tokenizer: VariorumTokenizer) -> None:
    pg_tokenizer.save(tmp_path / "tok")
    config = dataclasses.replace(tiny_permgen_config(1), task="paraphrase", pair_min_content_kept=0.6,
                                 pair_max_similarity=0.8)
    train = TrainConfig(train_files=[str(PAIRS)], out_dir=str(tmp_path / "run"), batch_size=2, max_steps=1,
                        eval_every=1, eval_batches=1, warmup_steps=1, device="cpu")
    trainer = PermGenTrainer(config, train, [str(FIXTURES / "paraphrase" / "msr_paraphrase_fixture.txt")],
                             tmp_path / "tok")
    kept = rephrasing_pairs(read_parasci(PAIRS), 0.6, 0.8)
    assert [pair.title for pair in kept] == ["the tagger assigns a part of speech to every word ."]
    assert trainer.stats.dropped_pairs == 4
    assert {e.title for e in trainer.train_examples} == {kept[0].title, kept[0].sentences[0]}  # both ways
    trainer.run()
    card = (tmp_path / "run" / "bundle" / "card.md").read_text()
    assert "kept only pairs that rephrase (content kept ≥ 0.6, word similarity ≤ 0.8), dropping 4" in card


def _pair(source: str, rewrite: str) -> ParagraphExample:
    return ParagraphExample(source, (), (rewrite,))


def test_within_floor_keeps_a_pair_in_each_direction_whose_rewrite_the_floor_would_show() -> None:
    moved, dropped, claim = _pair(*MOVED), _pair(*NAME_DROPPED), _pair(*NEW_CLAIM)
    backward = [_pair(*reversed(pair)) for pair in (MOVED, NAME_DROPPED, NEW_CLAIM)]
    copy = _pair(SOURCE, SOURCE.lower())  # the same words: not a rewrite
    assert within_floor([moved, dropped, claim, copy]) == [moved]
    assert within_floor(backward) == [backward[0]]
    config = PermGenConfig(model=ModelConfig(backbone="bart"), task="paraphrase", pair_within_floor=True)
    assert config.filters_pairs
    assert selected_pairs([moved, dropped, claim], config) == [moved]
    with pytest.raises(ConfigError, match="pair_within_floor select paraphrase pairs; task 'story' has none"):
        dataclasses.replace(tiny_permgen_config(50), pair_within_floor=True)


def test_the_trainer_reads_a_floor_pair_only_in_the_directions_the_floor_keeps(
        tmp_path: Path, pg_tokenizer: VariorumTokenizer) -> None:
    pg_tokenizer.save(tmp_path / "tok")
    pairs = [MOVED, NAME_DROPPED, NEW_CLAIM]
    (tmp_path / "pairs.src.txt").write_text("".join(source + "\n" for source, _ in pairs))
    (tmp_path / "pairs.tgt.txt").write_text("".join(rewrite + "\n" for _, rewrite in pairs))
    config = dataclasses.replace(tiny_permgen_config(1), task="paraphrase", pair_within_floor=True)
    train = TrainConfig(train_files=[str(tmp_path / "pairs.src.txt")], out_dir=str(tmp_path / "run"), batch_size=2,
                        max_steps=1, eval_every=1, eval_batches=1, warmup_steps=1, device="cpu")
    trainer = PermGenTrainer(config, train, [str(FIXTURES / "paraphrase" / "msr_paraphrase_fixture.txt")],
                             tmp_path / "tok")
    assert trainer.stats.dropped_pairs == 2  # the dropped name and the new claim
    assert [(e.title, e.sentences[0]) for e in trainer.train_examples] == [MOVED, MOVED[::-1]]
    trainer.run()
    card = (tmp_path / "run" / "bundle" / "card.md").read_text()
    assert "read only in the directions the meaning floor would show), dropping 2" in card
