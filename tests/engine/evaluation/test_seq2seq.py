"""`variorum eval` for PermGen bundles: the paragraph protocol (PermGen §5.4) and the paraphrase
protocol (POSG §5.3) on tiny bundles and our fixture data, through the app's own request path."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
import torch

from engine.bundles.bundle import save_bundle
from engine.decoding import DecodeConfig
from engine.evaluation.run import main
from engine.evaluation.seq2seq import paragraph_candidates, paragraph_metrics, paragraph_words, paraphrase_metrics
from engine.evaluation.splits import load_split
from engine.lm.family import lm_tasks
from engine.metrics.bleu import corpus_bleu, sentence_bleu
from engine.permgen.bundle import load_permgen_bundle
from engine.permgen.control import OrderControl
from engine.permgen.data import encode_examples, tokenizer_texts
from engine.permgen.decode import PermGenStream, PermGenVariant
from engine.permgen.heldout import target_nll
from engine.permgen.loaded import PermGenLoadedModel
from engine.permgen.model import PermGenModel
from engine.permgen.readers import read_examples
from engine.permgen.text import format_source
from engine.tokenizer import VariorumTokenizer
from tests.engine.evaluation.conftest import TINY_SPLIT
from tests.engine.permgen.conftest import FIXTURES, STORIES, tiny_permgen_config

PG_FLAGS = ["--split-fraction", "0.99", "--candidates", "3", "--seed", "2"]


@pytest.fixture(scope="module")
def data_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Our fixture stories and pairs laid out as ../shared/data's test files."""
    root = tmp_path_factory.mktemp("data")
    stories = root / "rocstories" / "plan_and_write"
    stories.mkdir(parents=True)
    shutil.copy(STORIES, stories / "ROCStories_all_merge_tokenize.titlesepkeysepstory.test.txt")
    pairs = root / "paraphrase" / "parasci" / "ParaSCI-ACL"
    pairs.mkdir(parents=True)
    for suffix in ("src", "tgt"):
        shutil.copy(FIXTURES / "paraphrase" / f"fixture.{suffix}.txt", pairs / f"test.{suffix}.txt")
    turk = root / "paraphrase" / "turkcorpus"
    turk.mkdir()
    rows = [("The cat sat on the mat .", "A cat sat on a mat."), ("He went home early .", "He left for home early.")]
    (turk / "test.8turkers.organized.tsv").write_text("".join(
        f"{i}\t{source}\t" + "\t".join(f"{rewrite} ({k})" for k in range(8)) + "\n"
        for i, (source, rewrite) in enumerate(rows)))
    return root


@pytest.fixture(scope="module")
def pg_bundles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    pg_tokenizer = VariorumTokenizer.train(tokenizer_texts(read_examples(STORIES)), vocab_size=330)
    root = tmp_path_factory.mktemp("pg_bundles")
    paths = {}
    for name, task, permute in (("story", "story", True), ("baseline", "story", False), ("para", "paraphrase", True)):
        torch.manual_seed(len(paths))
        config = tiny_permgen_config(pg_tokenizer.vocab_size)
        config.task, config.permute = task, permute
        save_bundle(root / name, PermGenModel(config).eval(), pg_tokenizer, f"# {name}\n\nuntrained\n",
                            {"train": {"train_files": ["dev.txt"], "valid_fraction": 0.05}})
        paths[name] = root / name
    return paths


def test_top1_is_the_rank_one_candidate_and_oracle_the_best(
    pg_bundles: dict[str, Path], data_root: Path
) -> None:
    bundle = load_permgen_bundle(pg_bundles["story"])
    split = load_split("rocstories_story", data_root, 0.99)
    settings = DecodeConfig(top_p=0.9, max_new_tokens=6)
    counted: list[int] = []
    model = PermGenLoadedModel(bundle, torch.device("cpu"))
    variants, targets = paragraph_candidates(model, split, settings, 3, 1, 10, 2, counted.append)
    candidates = [[paragraph_words(v) for v in group] for group in variants]
    assert counted == [1, 1] and len(candidates) == 2 and all(len(c) == 3 for c in candidates)
    for i, example in enumerate(split.examples[:2]):  # source i: the app's stream with base seed 10 + 3i
        source = bundle.tokenizer.encode(format_source(example.title, example.keywords))
        stream = PermGenStream(bundle.model, bundle.tokenizer, source, 3, settings.with_seed(10 + 3 * i),
                               OrderControl(distinct_starts=True))
        list(stream)
        ranked = sorted(stream.candidates, key=lambda v: v.rank)
        assert candidates[i] == [paragraph_words(v) for v in ranked]
        assert targets[i] == " ".join(example.sentences).split()
    metrics = paragraph_metrics(candidates, targets)
    refs = [[t] for t in targets]
    assert metrics["top1_bleu_4"] == pytest.approx(corpus_bleu([c[0] for c in candidates], refs, 4))
    # oracle: per source the candidate with the best *sentence* BLEU, then corpus BLEU of those (§5.4)
    best = [c[int(sentence_bleu(c, [[t]] * 3).argmax())] for c, t in zip(candidates, targets, strict=True)]
    assert metrics["oracle_bleu_4"] == pytest.approx(corpus_bleu(best, refs, 4))


def test_paragraph_and_paraphrase_metrics_on_hand_made_texts() -> None:
    target = ["the", "cat", "sat", "on", "the", "mat", "today"]
    same = paragraph_metrics([[target, target, target]], [target])
    assert same["top1_bleu_4"] == same["oracle_bleu_4"] == pytest.approx(1.0)
    assert same["pairwise_self_bleu_4"] == pytest.approx(1.0) and same["distinct_2"] == pytest.approx(6 / 18)
    other = ["a", "dog", "ran", "far", "away", "from", "home"]
    mixed = paragraph_metrics([[other, target]], [target])  # rank 1 is wrong, the oracle finds the target
    assert mixed["top1_bleu_4"] == 0.0 and mixed["oracle_bleu_4"] == pytest.approx(1.0)
    assert mixed["pairwise_self_bleu_4"] == 0.0 and mixed["entropy_1"] > same["entropy_1"]
    assert paragraph_metrics([[target]], [target])["pairwise_self_bleu_4"] is None  # K = 1: no pairs
    assert same["seq_rep_4"] == 0.0  # 4 four-grams, all different
    looped = ["a", "b", "c", "d", "a", "b", "c", "d"]  # 5 four-grams: abcd bcda cdab dabc abcd
    assert paragraph_metrics([[looped, target]], [target])["seq_rep_4"] == pytest.approx((1 / 5 + 0) / 2)
    copy = paraphrase_metrics([["the cat sat on the mat", "the cat sat on the mat"]], ["the cat sat on the mat"],
                              ["a cat was sitting on the mat"])
    assert copy["self_bleu_4_source"] == pytest.approx(1.0) and copy["self_wer_source"] == 0.0
    assert 0 < copy["rouge1"] < 1 and copy["distinct_1"] == pytest.approx(5 / 6)


@pytest.fixture(scope="module")
def story_report(pg_bundles: dict[str, Path], data_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("eval_story")
    argv = ["--bundles", str(pg_bundles["story"]), str(pg_bundles["baseline"]), "--split", "rocstories_story",
            "--data-root", str(data_root), "--out", str(out), "--decoders", "topp=0.9", "greedy", "--max-sources", "2",
            *PG_FLAGS]
    assert main(argv) == 0
    return out


def test_perplexity_is_scored_before_the_model_is_loaded_to_generate(
    pg_bundles: dict[str, Path], data_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Loaded to generate on the CPU, a model on the base keeps only float16 block weights, slow to score with."""
    from engine.evaluation import seq2seq

    calls: list[str] = []
    scored, loaded = seq2seq.split_perplexity, seq2seq.PermGenLoadedModel
    monkeypatch.setattr(seq2seq, "split_perplexity", lambda *a, **k: calls.append("scored") or scored(*a, **k))
    monkeypatch.setattr(seq2seq, "PermGenLoadedModel", lambda *a, **k: calls.append("loaded") or loaded(*a, **k))
    argv = ["--bundles", str(pg_bundles["story"]), "--split", "rocstories_story", "--data-root", str(data_root),
            "--out", str(tmp_path / "out"), "--decoders", "greedy", "--max-sources", "1", *PG_FLAGS]
    assert main(argv) == 0
    assert calls[:2] == ["scored", "loaded"]


def test_split_perplexity_tells_its_progress_and_does_not_depend_on_the_batch_size(
    pg_bundles: dict[str, Path], data_root: Path,
) -> None:
    from engine.evaluation.story_checks import split_perplexity

    bundle = load_permgen_bundle(pg_bundles["story"])
    split = load_split("rocstories_story", data_root, 0.99)
    told: list[int] = []
    batched = split_perplexity(bundle, split, batch_size=3, progress=told.append)
    assert told == [3, 1] and sum(told) == len(split.examples)  # 4 paragraphs: a batch of 3, then the last one
    one_by_one = split_perplexity(bundle, split, batch_size=1)
    assert batched["ppl_natural_word"] == pytest.approx(one_by_one["ppl_natural_word"], rel=1e-4)


def test_story_report_has_the_paragraph_table(story_report: Path, pg_bundles: dict[str, Path]) -> None:
    report = json.loads((story_report / "report.json").read_text())
    assert report["protocol"] == "story" and report["settings"]["candidates"] == 3
    assert [b["permute"] for b in report["bundles"]] == [True, False]
    assert all(b["held_out"] is True for b in report["bundles"])  # trained on dev.txt, not the test file
    for bundle in report["bundles"]:
        for metrics in bundle["result"]["seq2seq"].values():
            assert 0 <= metrics["top1_bleu_4"] <= 1 and 0 <= metrics["oracle_bleu_4"] <= 1
            assert 0 <= metrics["pairwise_self_bleu_4"] <= 1 and metrics["entropy_4"] >= 0
    human = report["human"]["seq2seq"]
    assert human["sources"] == 2 and report["split"]["documents"] == 4 and "pairwise_self_bleu_4" not in human
    text = (story_report / "report.md").read_text()
    assert "| story | topp=0.9 |" in text and "| baseline | greedy |" in text and "| Human |" in text
    assert "oracle B-4" in text and (story_report / "tradeoff.png").read_bytes()[:4] == b"\x89PNG"
    assert "seq-rep-4" in text and "| PPL |" in text


def test_story_report_perplexity_is_the_held_out_nll_on_every_split_paragraph(
    story_report: Path, pg_bundles: dict[str, Path], data_root: Path,
) -> None:
    report = json.loads((story_report / "report.json").read_text())
    bundle = load_permgen_bundle(pg_bundles["story"])
    config = bundle.model.config
    split = load_split("rocstories_story", data_root, 0.99)
    data = encode_examples(split.examples, bundle.tokenizer, config.max_source_len, config.max_sentence_len,
                           lowercase=config.lowercase, task=config.task)
    expected = math.exp(target_nll(bundle.model, data, 1))  # one example a batch: no padding in play
    # per word: the summed NLL (marks and the end included) over whitespace words, each paragraph's end one more
    tokens = sum(sum(len(s) + 2 for s in e.sentences) + 1 for e in data)
    words = sum(len(" ".join(e.sentences).lower().split()) + 1 for e in split.examples)
    for metrics in report["bundles"][0]["result"]["seq2seq"].values():
        assert metrics["ppl_natural"] == pytest.approx(expected, rel=1e-4)
        assert metrics["ppl_natural_word"] == pytest.approx(expected ** (tokens / words), rel=1e-4)
        assert 0 <= metrics["order_followed"] <= 1 and 0 <= metrics["title_word_repeated"] <= 1
    assert 0 <= report["human"]["seq2seq"]["title_word_repeated"] <= 1
    assert len(split.examples) == 4 > report["human"]["seq2seq"]["sources"]  # PPL reads all, decoding 2


def test_paraphrase_report(pg_bundles: dict[str, Path], data_root: Path, tmp_path: Path) -> None:
    argv = ["--bundles", str(pg_bundles["para"]), "--split", "parasci", "--data-root", str(data_root),
            "--out", str(tmp_path), "--decoders", "topp=0.9", "--max-sources", "3", *PG_FLAGS]
    assert main(argv) == 0
    report = json.loads((tmp_path / "report.json").read_text())
    metrics = report["bundles"][0]["result"]["seq2seq"]["topp=0.9"]
    expected = {"bleu_4", "rouge1", "rouge2", "rougeL", "self_bleu_4_source", "self_wer_source", "distinct_2"}
    assert expected <= set(metrics)
    assert report["human"]["seq2seq"]["sources"] == 3 and "Self-WER" in (tmp_path / "report.md").read_text()


def test_wrong_bundle_for_the_split_is_a_clear_error(
    pg_bundles: dict[str, Path], tiny_bundle: Path, data_root: Path, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    base = ["--data-root", str(data_root), "--out", str(tmp_path / "x"), *PG_FLAGS]
    story = ["--split", "rocstories_story"]
    cases = [
        ([str(tiny_bundle)], story, f"writes {' / '.join(map(repr, lm_tasks()))}; split 'rocstories_story' evaluates"),
        ([str(pg_bundles["story"])], ["--split", "parasci"], "writes 'story'; split 'parasci' evaluates task"),
        ([str(pg_bundles["story"]), str(tiny_bundle)], story, "evaluate them apart"),
        ([str(pg_bundles["story"])], ["--split-file", str(TINY_SPLIT)], "evaluates task 'continue' (the task splits"),
    ]
    for bundles, split, message in cases:
        capsys.readouterr()
        assert main(["--bundles", *bundles, *split, *base]) == 2
        assert message in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_turkcorpus_report_scores_against_all_eight_rewrites(
    pg_bundles: dict[str, Path], data_root: Path, tmp_path: Path
) -> None:
    argv = ["--bundles", str(pg_bundles["para"]), "--split", "turkcorpus", "--data-root", str(data_root),
            "--out", str(tmp_path), "--decoders", "topp=0.9,copy=2", *PG_FLAGS]
    assert main(argv) == 0
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["split"]["documents"] == 2  # every row of the test file
    metrics = report["bundles"][0]["result"]["seq2seq"]["topp=0.9,copy=2"]
    assert 0 <= metrics["distinct_rewrites"] <= 3 and 0 <= metrics["content_words_kept"] <= 1
    assert 0 <= metrics["pairwise_self_bleu_4"] <= 1 and 0 <= metrics["bleu_4"] <= 1
    assert 0 <= metrics["content_words_added"] <= 1
    assert 0 <= metrics["distinct_word_rewrites"] <= metrics["distinct_rewrites"]
    assert "Content added %" in (tmp_path / "report.md").read_text()
    assert "| in words |" in (tmp_path / "report.md").read_text()
    human = report["human"]["seq2seq"]  # "He left for home early" against "He went home early": "left" added
    assert human["content_words_added"] > 0 and human["content_words_kept"] < 1
    split = load_split("turkcorpus", data_root)
    assert split.pairs[1] == ("He went home early .", "He left for home early . ( 0 )")
    assert len(split.references[1]) == 8 and split.references[1][7] == "He left for home early . ( 7 )"


def test_held_out_paragraphs_prints_each_inputs_variants_beside_the_human_text(
    pg_bundles: dict[str, Path], data_root: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    from engine.benchmarks import held_out_paragraphs

    held_out_paragraphs.main(["--bundle", str(pg_bundles["story"]), "--count", "2", "--candidates", "2",
                              "--data-root", str(data_root), "--split-fraction", "0.99", "--max-new-tokens", "6"])
    out = capsys.readouterr().out
    split = load_split("rocstories_story", data_root, 0.99)
    assert "[2]" in out and "[3]" not in out and out.count("  model: ") == 4
    assert f"  human: {' '.join(split.examples[1].sentences)}" in out
    held_out_paragraphs.main(["--bundle", str(pg_bundles["para"]), "--count", "1", "--data-root", str(data_root),
                              "--max-new-tokens", "6"])
    assert "  human: " in capsys.readouterr().out


def test_said_before_prints_each_runs_repetition_and_the_four_grams_said_again(
    pg_bundles: dict[str, Path], data_root: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    from engine.benchmarks import said_before
    from engine.permgen.decode import SAID_BEFORE_RUN

    shipped = dict(SAID_BEFORE_RUN)
    said_before.main(["--bundle", str(pg_bundles["story"]), "--count", "2", "--candidates", "2", "--run", "4", "2",
                      "--data-root", str(data_root), "--max-new-tokens", "6"])
    lines = capsys.readouterr().out.splitlines()
    heads = [line for line in lines if line.startswith("run ")]
    texts = len(load_split("rocstories_story", data_root).examples[:2]) * 2
    assert [h.split(":")[0] for h in heads] == ["run 4", "run 2"] and all(f"over {texts} texts" in h for h in heads)
    assert sum(line.startswith("  [") for line in lines) == 2 * texts and shipped == SAID_BEFORE_RUN
    assert said_before.repeated_grams(["a", "b", "c", "d", "x", "a", "b", "c", "d"]) == ["a b c d"]
    with pytest.raises(SystemExit):
        said_before.main(["--bundle", str(pg_bundles["para"]), "--data-root", str(data_root)])


def test_prefix_use_scores_each_target_after_its_own_another_and_no_source(
    pg_bundles: dict[str, Path], data_root: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    from engine.benchmarks import prefix_use

    prefix_use.main(["--bundle", str(pg_bundles["story"]), "--count", "2", "--data-root", str(data_root),
                     "--split-fraction", "0.99"])
    lines = capsys.readouterr().out.splitlines()
    assert "2 held-out targets" in lines[0] and len(lines) == 4
    nlls = [float(line.rsplit(": ", 1)[1]) for line in lines[1:]]
    assert all(n > 0 for n in nlls) and len(set(nlls)) > 1  # an untrained model still reads its source somewhat


def test_a_prose_candidate_is_compared_in_the_targets_words() -> None:
    sentences = {2: "Then the wind took it!", 1: "Anna didn't fly her kite."}
    prose = PermGenVariant(index=0, seed=0, settings={}, sentences=sentences)
    words = "anna did n't fly her kite . then the wind took it !"
    assert paragraph_words(prose) == words.split(" ")
    assert paragraph_words(prose, lowercase=False)[:3] == ["Anna", "did", "n't"]
    normalised = PermGenVariant(index=0, seed=0, settings={}, sentences={1: "anna did n't fly her kite ."})
    assert paragraph_words(normalised) == words.split(" ")[:7]  # already the targets' form


def test_paraphrase_time_times_each_bundle_and_shows_its_rewrites(
    pg_bundles: dict[str, Path], capsys: pytest.CaptureFixture[str],
) -> None:
    from engine.benchmarks import paraphrase_time

    paraphrase_time.main(["--bundles", str(pg_bundles["para"]), str(pg_bundles["para"]), "--candidates", "2",
                          "--rounds", "2"])
    lines = capsys.readouterr().out.splitlines()
    assert "2 rewrites of a 25-word sentence" in lines[0] and "median of 2 alternating rounds" in lines[0]
    timed = [line.split() for line in lines[2:4]]
    assert all(row[0] == str(pg_bundles["para"]) and float(row[1]) > 0 and float(row[2]) > 0 for row in timed)
    assert paraphrase_time.SENTENCE in lines and sum(line.startswith("  ") for line in lines) == 4
    assert len(paraphrase_time.SENTENCE.split()) == 25
    paraphrase_time.main(["--bundles", str(pg_bundles["para"]), "--candidates", "2", "--rounds", "1",
                          "--guidance", "1", "2"])  # one bundle at each strength of "Stay on topic"
    guided = [line.split() for line in capsys.readouterr().out.splitlines()[2:4]]
    assert [row[1:3] for row in guided] == [["γ", "1"], ["γ", "2"]] and all(float(row[3]) > 0 for row in guided)
    paraphrase_time.main(["--bundles", str(pg_bundles["para"]), "--candidates", "2", "--rounds", "1",
                          "--drafts", "1", "3"])  # a model without a meaning floor takes no drafts: timed once
    rows = [line for line in capsys.readouterr().out.splitlines()[2:] if line.startswith(str(pg_bundles["para"]))]
    rows = [line for line in rows if not line.endswith(":")]  # the timed rows, not the rewrites' headings
    assert len(rows) == 1 and "· 1 drafts" in rows[0]
