"""A paraphrase model on the base keeps a rewrite only when it keeps the meaning and says something new; rewordings
fill the other variants, and where none is left the writer's sentence stays."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from engine.bundles.bundle import ModelBundle
from engine.decoding.settings import DecodeConfig
from engine.loaded_model import PARAPHRASE_DRAFTS_NOTE, GenerationRequest
from engine.paraphrase.variants import ParaphraseVariant
from engine.permgen.decoder_model import DecoderPermGenModel
from engine.permgen.loaded import PermGenLoadedModel, rewording_judge
from engine.permgen.meaning_floor import REFUSALS, MeaningFloor, lost_names, new_names
from engine.permgen.paraphrase import ParaphraseStream
from engine.permgen.text import ProseForm
from engine.rewording import rewording_available
from engine.rewording.search import Rewording, ScoredText
from engine.tokenizer import VariorumTokenizer
from tests.engine.permgen.conftest import tiny_decoder_config

SOURCE = "The old man walked to the store."


class _Rewordings(Rewording):
    """Fixed rewordings, recording what they were asked for."""

    def __init__(self, texts: list[str], tokenizer: VariorumTokenizer | None = None) -> None:
        self.texts, self.tokenizer, self.asked = texts, tokenizer, []  # type: ignore[var-annotated]

    def rewrites(self, sentence: str, n: int, seed: int) -> list[ScoredText]:
        self.asked.append((sentence, n, seed))
        ids = [self.tokenizer.encode(text) if self.tokenizer else [] for text in self.texts[:n]]
        return [ScoredText(text, i, [-1.0] * (len(i) + 1)) for text, i in zip(self.texts[:n], ids, strict=True)]


def _drafts(*texts: str) -> list[ScoredText]:
    return [ScoredText(text, [], []) for text in texts]


def test_a_rewrite_is_kept_when_it_keeps_the_content_words_and_differs() -> None:
    floor = MeaningFloor(0.85)
    assert floor.keeps(SOURCE, "The man who was old walked to the store.")
    assert not floor.keeps(SOURCE, "The old man walked to the store .")  # the same words
    assert not floor.keeps(SOURCE, "The elderly man walked to the shop.")  # 2 of 4 content words
    assert not floor.keeps(SOURCE, "")
    assert MeaningFloor(0.5, max_content_added=0.5).keeps(SOURCE, "The elderly man walked to the shop.")
    with pytest.raises(ValueError, match=r"min_content_kept must be in \[0, 1\]"):
        MeaningFloor(1.5)
    with pytest.raises(ValueError, match=r"max_content_added must be in \[0, 1\]"):
        MeaningFloor(max_content_added=-0.1)


def test_a_rewrite_may_not_add_a_claim_or_a_name() -> None:
    floor, source = MeaningFloor(), "The tired workers walked slowly to the busy market in town."  # 7 content words
    assert floor.keeps(source, "The tired workers strolled slowly to the busy market in town.")  # a synonym
    claim = "The tired workers walked slowly to the busy market in town to buy construction tools."
    assert not floor.keeps(source, claim)  # buy, construction, tools: 3 of 10 content words added
    assert MeaningFloor(max_content_added=0.3).keeps(source, claim)
    assert not floor.keeps(source, "The tired workers from Abbala walked slowly to the busy market in town.")
    assert floor.keeps("Tired Abbala workers walked slowly to the busy market in town.",
                       "The tired workers from Abbala walked slowly to the busy market in town.")
    assert floor.keeps(source, "I think the tired workers walked slowly to the busy market in town.")  # no name
    assert new_names("The Abbala tribes.", "The AblE-LadEn tribes, said Tom.") == ["AblE", "LadEn", "Tom"]


def test_the_floor_says_why_it_refuses_a_rewrite_the_first_reason_first() -> None:
    floor = MeaningFloor()
    assert floor.refusal(SOURCE, "The man who was old walked to the store.") is None
    assert floor.refusal(SOURCE, "The old man walked to the store .") == "copy or empty"
    assert floor.refusal(SOURCE, " ") == "copy or empty"
    assert floor.refusal(SOURCE, "The old man walked to the store!") == "copy or empty"  # punctuation alone
    assert floor.refusal(SOURCE, "the old man, walked to The Store") == "copy or empty"  # case and a comma
    assert floor.refusal(SOURCE, "The old man from Abbala walked to the store.") == "new name"
    assert floor.refusal(SOURCE, "The elderly man of Abbala went to the shop.") == "new name"  # before what it lost
    assert floor.refusal(SOURCE, "The old man walked to the store to buy construction tools.") == "content added"
    assert floor.refusal(SOURCE, "The man walked to the store.") == "content lost"  # 3 of 4 content words
    assert REFUSALS == ("copy or empty", "new name", "name or number lost", "content added", "content lost")


def test_a_rewrite_keeps_the_names_and_numbers_of_its_sentence() -> None:
    floor = MeaningFloor()
    source = "Alessandro ( \" Sandro \" ) Mazzola ( born 8 November 1942 ) is an Italian former football player ."
    assert floor.refusal(source, "Alessandro Sandro (born 8 November 1942) is an Italian former football player.") \
        == "name or number lost"  # Mazzola
    assert floor.refusal(source, "Alessandro Mazzola (born 8 November 1942) is a former Italian football player.") \
        == "name or number lost"  # Sandro
    assert floor.refusal(source, "Alessandro \"Sandro\" Mazzola (born 8 November) is an Italian former footballer.") \
        == "name or number lost"  # 1942
    assert floor.keeps(source, "Alessandro \"Sandro\" Mazzola (born 8 November 1942) is a former Italian football "
                               "player.")
    assert lost_names("He died on 13 January 888 .", "On January 13, 888, he died.") == []  # moved, not lost
    assert lost_names("It won £ 5000 in Kent .", "In kent it won £5,000.") == []  # case and thousands' commas
    assert lost_names("It won £ 5000 in Kent .", "It won £500 in Essex.") == ["Kent", "5000"]


def test_rewordings_fill_in_for_the_rewrites_not_kept_and_repeats_come_last() -> None:
    kept, repeat = "The man who was old walked to the store.", "the man who was old walked to the store ."
    drafts = _drafts(kept, repeat, "A dog ran home.", SOURCE)
    rewordings = _Rewordings(["The man who was old walked to the store.", "The old man went to the store."])
    chosen = MeaningFloor(rewording=rewordings).choose(SOURCE, drafts, seed=7)
    assert [c.text if c else None for c in chosen] == [kept, "The old man went to the store.", repeat, None]
    assert rewordings.asked == [(SOURCE, 4, 7)]
    alone = MeaningFloor().choose(SOURCE, drafts, seed=7)  # no rewording: a repeat beats the writer's sentence
    assert [c.text if c else None for c in alone] == [kept, repeat, None, None]
    one = _drafts(kept)
    assert MeaningFloor(rewording=rewordings).choose(SOURCE, one, seed=7)[0] is one[0]
    assert len(rewordings.asked) == 1  # nothing to fill: no rewording asked for


def test_more_drafts_than_variants_show_the_first_kept_before_any_rewording() -> None:
    later = "The old man walked all the way to the store."
    drafts = _drafts("A dog ran home.", "The man who was old walked to the store.", SOURCE, later, "Old man.")
    rewordings = _Rewordings(["The old man went to the store."])
    chosen = MeaningFloor(rewording=rewordings).choose(SOURCE, drafts, seed=7, n=2)
    assert [c.text if c else None for c in chosen] == [drafts[1].text, later]
    assert rewordings.asked == []
    with pytest.raises(ValueError, match="drafts_per_variant must be at least 1"):
        MeaningFloor(drafts_per_variant=0)


def test_of_more_kept_drafts_than_variants_the_likeliest_then_the_most_different_are_shown() -> None:
    """Chosen as the app chooses among drafts (engine/selection/choose.py): likelihood, less what a draft shares
    with those chosen before it."""
    likeliest = ScoredText("The man who was old walked to the store.", [1, 2], [-0.1, -0.1])
    near_it = ScoredText("The man who was old walked over to the store.", [1, 2], [-0.5, -0.5])
    unlike_it = ScoredText("To the store walked the old man.", [1, 2], [-0.52, -0.52])
    chosen = MeaningFloor().choose(SOURCE, [near_it, unlike_it, likeliest], seed=7, n=2)
    assert chosen == [likeliest, unlike_it]  # about as likely as near_it, which repeats most of the likeliest
    near_the_source = ScoredText("The old man walked over to the store.", [1, 2], [-0.1, -0.1])
    reworded = ScoredText("To the store went the elderly man.", [1, 2], [-0.11, -0.11])
    unlikely = ScoredText("The aged man walked to the shop.", [1, 2], [-1.0, -1.0])
    lenient = MeaningFloor(0.5, max_content_added=0.5)
    # about as likely, and says less of SOURCE again
    assert lenient.choose(SOURCE, [near_the_source, reworded, unlikely], seed=7, n=1) == [reworded]
    shouted = ScoredText("The man who was old walked to the store!", [1, 2], [-0.3, -0.3])
    assert MeaningFloor().different_kept(SOURCE, [likeliest, shouted]) == 1  # punctuation alone: a repeat
    assert MeaningFloor().different_kept(SOURCE, [likeliest, shouted, near_it, unlike_it]) == 3
    assert MeaningFloor().choose(SOURCE, [near_it, unlike_it, likeliest], seed=7, n=3) == [near_it, unlike_it,
                                                                                           likeliest]


def _prose_paraphraser(tokenizer: VariorumTokenizer) -> DecoderPermGenModel:
    config = tiny_decoder_config(tokenizer.vocab_size, text_form="prose", task="paraphrase",
                                 paraphrase_source="instruction")
    torch.manual_seed(0)
    return DecoderPermGenModel(config).eval()


@pytest.mark.parametrize("beam", [1, 3])
def test_the_stream_shows_only_what_the_floor_chose(pg_tokenizer: VariorumTokenizer, beam: int) -> None:
    model, passage = _prose_paraphraser(pg_tokenizer), "Anna flew her kite. The wind took it."
    rewordings = _Rewordings(["Anna's kite flew.", "The kite flew, and Anna held it."], pg_tokenizer)
    floor = MeaningFloor(1.0, rewordings, lowercase=model.config.lowercase)
    stream = ParaphraseStream(model, pg_tokenizer, passage, 3, DecodeConfig(seed=2, max_new_tokens=8), beam,
                              prose=ProseForm("paraphrase", model.config.lowercase), floor=floor)
    streamed = ["", "", ""]
    for event in stream:
        streamed[event.variant] += event.text_delta
    variants: list[ParaphraseVariant] = stream.candidates
    firsts = [v.alternatives[0] for v in variants]  # a tiny random model keeps no content word: rewordings
    assert [a.text for a in firsts] == ["Anna's kite flew.", "The kite flew, and Anna held it.", "Anna flew her kite."]
    assert [a.kept_source for a in firsts] == [False, False, True]
    assert [s for s, _, _ in rewordings.asked] == ["Anna flew her kite.", "The wind took it."]
    assert rewordings.asked[1][2] != rewordings.asked[0][2]  # each sentence draws with its own seed
    assert streamed[:2] == [v.text for v in variants[:2]]  # what streamed is what the variant shows
    assert streamed[2] == ""  # the writer's sentences, kept: nothing new to stream


@pytest.mark.skipif(not rewording_available(), reason="rewording needs the `pos` extra")
def test_the_app_gets_todays_rewordings_where_the_model_keeps_no_meaning(pg_tokenizer: VariorumTokenizer) -> None:
    model = _prose_paraphraser(pg_tokenizer)
    loaded = PermGenLoadedModel(ModelBundle(Path("tiny-paraphraser"), model, pg_tokenizer, ""), torch.device("cpu"))
    request = GenerationRequest(task="paraphrase", prompt="Because he was sick, Tom stayed home and called his boss.",
                                n=3, decode=DecodeConfig(seed=1, max_new_tokens=8))
    floor = loaded._meaning_floor(request)
    assert floor is not None and floor.rewording is not None
    assert floor.rewording.scorer.model is rewording_judge("cpu")[0]  # type: ignore[index]  # today's, shared
    texts = [v.text for v in loaded.generate(request)]
    rewordings = [r.text for r in floor.rewording.rewrites(request.prompt, 3, seed=1)]  # sentence 0's seed
    assert rewordings and texts == rewordings + [request.prompt] * (3 - len(rewordings))  # random: no meaning


def test_without_todays_rewording_model_the_floor_still_holds(pg_tokenizer: VariorumTokenizer, tmp_path: Path) -> None:
    assert rewording_judge("cpu", tmp_path / "missing") is None


def test_a_guided_paraphrase_twin_reads_the_instruction_without_a_sentence(pg_tokenizer: VariorumTokenizer) -> None:
    loaded = PermGenLoadedModel(ModelBundle(Path("tiny-paraphraser"), _prose_paraphraser(pg_tokenizer), pg_tokenizer,
                                            ""), torch.device("cpu"))
    assert loaded.capabilities.guides("paraphrase")
    twin = pg_tokenizer.decode(loaded.unconditioned_ids())
    assert twin.startswith("Paraphrase this sentence:") and twin.endswith("\nParaphrase:")
    assert "Anna" not in twin and twin.count(":") == 2  # the instruction and the joiner, and no sentence between
    request = GenerationRequest(task="paraphrase", prompt="Anna flew her kite.", n=2,
                                decode=DecodeConfig(seed=1, max_new_tokens=6, guidance=2.0))
    assert len(loaded.generate(request)) == 2
    with pytest.raises(ValueError, match="the sentence beam keeps the model's own likeliest sentences"):
        loaded.generate(GenerationRequest(task="paraphrase", prompt="Anna flew her kite.", n=2, beam_width=2,
                                          decode=request.decode))


def test_the_writers_drafts_are_what_the_floor_chooses_among(pg_tokenizer: VariorumTokenizer,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    loaded = PermGenLoadedModel(ModelBundle(Path("tiny-paraphraser"), _prose_paraphraser(pg_tokenizer), pg_tokenizer,
                                            ""), torch.device("cpu"))
    assert loaded.capabilities.chooses_drafts("paraphrase")
    seen: list[tuple[int, int, int | None]] = []
    choose = MeaningFloor.choose

    def recorded(floor: MeaningFloor, source: str, drafts: list[ScoredText], seed: int,
                 n: int | None = None) -> list[ScoredText | None]:
        seen.append((floor.drafts_per_variant, len(drafts), n))
        return choose(floor, source, drafts, seed, n)

    monkeypatch.setattr(MeaningFloor, "choose", recorded)
    request = GenerationRequest(task="paraphrase", prompt="Anna flew her kite. The wind took it.", n=2,
                                decode=DecodeConfig(seed=1, max_new_tokens=6, drafts=3))
    assert len(loaded.generate(request)) == 2
    assert loaded.selection_note == PARAPHRASE_DRAFTS_NOTE  # what the command line says of the drafts
    # each sentence: 3 drafts for each of the 2 variants shown, 3 rounds: a random model's drafts keep no meaning
    assert seen == [(3, 18, 2), (3, 18, 2)]
    config = tiny_decoder_config(pg_tokenizer.vocab_size, task="paraphrase")  # normalised: no floor
    plain = PermGenLoadedModel(ModelBundle(Path("tiny"), DecoderPermGenModel(config).eval(), pg_tokenizer, ""),
                               torch.device("cpu"))
    assert not plain.capabilities.chooses_drafts("paraphrase")
    with pytest.raises(ValueError, match=r"choosing among drafts is for .* paraphrases on the pretrained base"):
        plain.generate(request)


def _rounds_stream(tokenizer: VariorumTokenizer, monkeypatch: pytest.MonkeyPatch, rounds: list[list[str]],
                   floor: MeaningFloor, settings: DecodeConfig) -> tuple[ParaphraseStream, list[tuple[int, int]]]:
    """A 2-variant stream of SOURCE whose round r of drafts is `rounds[r]`; records (round, seed) of each round."""
    model = _prose_paraphraser(tokenizer)
    stream = ParaphraseStream(model, tokenizer, SOURCE, 2, settings, prose=ProseForm("paraphrase", False), floor=floor)
    written: list[tuple[int, int]] = []

    def sampled(j: int, count: int, round_index: int = 0) -> list[ScoredText]:
        written.append((round_index, stream._seed(j, round_index)))
        assert count == 2 * floor.drafts_per_variant
        return [ScoredText(text, tokenizer.encode(text), [-1.0] * len(tokenizer.encode(text)))
                for text in rounds[round_index]]

    monkeypatch.setattr(stream, "_sampled_drafts", sampled)
    return stream, written


def test_another_round_of_drafts_is_written_while_too_few_keep_the_meaning(pg_tokenizer: VariorumTokenizer,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    kept_one, kept_two = "The old man walked to the shop.", "The old man walked over to the store."
    rounds = [[SOURCE, kept_one], [kept_one, SOURCE], [kept_two, SOURCE]]  # a copy, then a repeat: two short rounds
    floor = MeaningFloor(0.6, lowercase=False, rounds=4)
    stream, written = _rounds_stream(pg_tokenizer, monkeypatch, rounds, floor, DecodeConfig(seed=3))
    list(stream)
    texts = [v.text for v in stream.variants]
    assert [r for r, _ in written] == [0, 1, 2]  # stopped at two different kept drafts, one round short of its 4
    assert len({seed for _, seed in written}) == 3  # each round its own seed
    assert written[0][1] == stream._seed(0)  # the first round is the one a floor without rounds writes
    assert sorted(texts) == sorted([kept_one, kept_two])


def test_rounds_of_drafts_stop_at_the_floors_limit_and_greedy_writes_one(pg_tokenizer: VariorumTokenizer,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    copies = [[SOURCE, SOURCE]] * 3
    stream, written = _rounds_stream(pg_tokenizer, monkeypatch, copies, MeaningFloor(lowercase=False, rounds=2),
                                     DecodeConfig(seed=3))
    list(stream)
    assert [r for r, _ in written] == [0, 1]
    assert all(v.alternatives[0].kept_source for v in stream.variants)  # nothing kept: the writer's sentence stays
    stream, written = _rounds_stream(pg_tokenizer, monkeypatch, copies, MeaningFloor(lowercase=False, rounds=2),
                                     DecodeConfig(seed=3, greedy=True))
    list(stream)
    assert [r for r, _ in written] == [0]  # greedy rounds would all write the same drafts
    with pytest.raises(ValueError, match="rounds must be at least 1"):
        MeaningFloor(rounds=0)
