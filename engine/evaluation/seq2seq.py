"""Protocols for PermGen bundles: paragraphs (PermGen §5.4) and paraphrases (POSG §5.3); `run_seq2seq`
runs them for `variorum eval`.

Candidates come from the app's own path, `PermGenLoadedModel.stream(GenerationRequest)`, so
every decoding control, the sentence-order behaviour of permuted vs `--no-permute` bundles and
beam search act exactly as in the app. Source i asks for K candidates with base seed
`seed + i·K` (candidate j has seed + i·K + j, so no two candidates share a seed). Texts are
compared as the model's normalised word tokens (lowercased, PTB-tokenized:
engine/data/text.py), as the papers score their tokenized data.

**Paragraphs** (task story / abstract; title + keywords → paragraph): the K candidates are
ranked by Eq. 8 (mean token log-prob; rank 1 first) and each is its sentences reordered by
index. Metrics (engine/metrics, one definition each): top-1 BLEU-4 (corpus BLEU of the rank-1
candidates), oracle BLEU-4 (per source the candidate with the best sentence BLEU, then corpus
BLEU), pairwise Self-BLEU-3/4 (mean sentence BLEU over ordered pairs of one source's K
candidates), Distinct-2/3 and Entropy-1..4 over all candidates pooled (Li et al. 2016 / Zhang
et al. 2018 as PermGen Table 7). METEOR and CIDEr (PermGen Table 7) are not computed. Added for writers
(engine/evaluation/story_checks.py): perplexity per word, the share of candidates that keep a sentence
order asked for (a second pass over the same sources) and the share that say a title word twice in a sentence.

**Paraphrases** (task paraphrase; sentence → K alternatives): quality of the first candidate
against the reference(s) — corpus BLEU-4 and ROUGE-1/2/L F1 (TurkCorpus: all 8 references);
distance of all K candidates from their source — Self-BLEU-4 (Cao & Wan 2020: corpus BLEU with
the source as reference, POSG A.3) and Self-WER; how different the K candidates are from one
another — pairwise Self-BLEU-4 (as for paragraphs) and distinct rewrites per source (candidates
that differ from the source and from one another); the share of the source's content words
each candidate keeps; Distinct-1..3 per text (the F²/POSG form; short sentences) and Distinct-2
over all candidates. BERTScore (POSG Table 4) needs a pretrained model we do not ship: not
computed. A sentence the model left empty keeps its source text (what the app shows), which
counts as an unchanged sentence.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tqdm import tqdm

from engine.bundles.words import known_training_words
from engine.data.corpus import file_sha256
from engine.data.text import normalize
from engine.decoding.settings import DecodeConfig
from engine.decoding.stream import Variant
from engine.devices import resolve_device
from engine.evaluation.decoders import check_decoders, parse_decoder
from engine.evaluation.protocols import ProtocolConfig
from engine.evaluation.report import display_name
from engine.evaluation.splits import EvalSplit
from engine.evaluation.story_checks import (
    human_title_word_repeated,
    order_followed,
    split_perplexity,
    title_word_repeated,
)
from engine.front_door import GenerationRequest
from engine.loaded_model import LoadedModel
from engine.metrics.bleu import pairwise_self_bleu, top1_and_oracle_bleu
from engine.metrics.diversity import distinct_n_corpus, distinct_n_per_text, entropy_n
from engine.metrics.invented import word_rates
from engine.metrics.paraphrase import (
    content_words_added,
    content_words_kept,
    distinct_rewrites,
    distinct_word_rewrites,
    paraphrase_bleu,
    paraphrase_rouge,
    self_bleu_vs_source,
    self_wer,
)
from engine.metrics.repetition import seq_rep_n
from engine.permgen.bundle import PermGenBundle, load_permgen_bundle
from engine.permgen.loaded import PermGenLoadedModel

Progress = Callable[[int], None]
Words = list[str]


def sources_of(split: EvalSplit, max_sources: int | None) -> int:
    """How many sources the protocol decodes from `split`."""
    total = len(split.examples) if split.task in ("story", "abstract") else len(split.pairs)
    return total if max_sources is None else min(total, max_sources)


def _candidates(model: LoadedModel, request: GenerationRequest) -> list[Variant]:
    stream = model.stream(request)
    for _ in stream:
        pass
    return list(stream.variants)


def paragraph_words(variant: Variant, lowercase: bool = True) -> Words:
    """A paragraph candidate's words: its sentences in index order (the displayed paragraph), normalised as the
    targets are, so a model that writes prose ("Tom didn't go.") is compared word for word ("tom did n't go .")."""
    sentences: dict[int, str] = getattr(variant, "sentences", {})
    return normalize(" ".join(sentences[t] for t in sorted(sentences)), lowercase).split()


def paragraph_candidates(
    model: PermGenLoadedModel, split: EvalSplit, settings: DecodeConfig, k: int, beam_width: int, seed: int,
    max_sources: int | None, progress: Progress,
) -> tuple[list[list[Variant]], list[Words]]:
    """(per source the K candidates ranked by Eq. 8, per source the target paragraph)."""
    lowercase = model.permgen.model.config.lowercase
    candidates, targets = [], []
    for i, example in enumerate(split.examples[: sources_of(split, max_sources)]):
        request = GenerationRequest(task=split.task, title=example.title, keywords=list(example.keywords), n=k,
                                    decode=settings.with_seed(seed + i * k), beam_width=beam_width)
        candidates.append(sorted(_candidates(model, request), key=lambda v: getattr(v, "rank", v.index)))
        targets.append(normalize(" ".join(example.sentences), lowercase).split())
        progress(1)
    return candidates, targets


def paragraph_metrics(candidates: Sequence[Sequence[Words]], targets: Sequence[Words]) -> dict[str, float | None]:
    """PermGen §5.4 for K candidates per source (see the module docstring)."""
    top1, oracle = top1_and_oracle_bleu(candidates, targets, 4)
    pooled = [c for group in candidates for c in group]
    several = all(len(group) >= 2 for group in candidates)
    result: dict[str, float | None] = {"top1_bleu_4": top1, "oracle_bleu_4": oracle}
    for n in (3, 4):
        result[f"pairwise_self_bleu_{n}"] = pairwise_self_bleu(candidates, n) if several else None
    result.update(corpus_diversity(pooled))
    return result


def corpus_diversity(texts: Sequence[Words]) -> dict[str, float | None]:
    """Distinct-2/3 and Entropy-1..4 pooled over `texts`, the share of repeated 4-grams within a text
    (seq-rep-4: 1 − distinct 4-grams / 4-grams, averaged over texts) and their mean length in words."""
    result: dict[str, float | None] = {f"distinct_{n}": distinct_n_corpus(texts, n) for n in (2, 3)}
    result["seq_rep_4"] = seq_rep_n(texts, 4)
    result.update({f"entropy_{n}": entropy_n(texts, n) for n in (1, 2, 3, 4)})
    result["mean_words"] = sum(len(t) for t in texts) / len(texts) if texts else 0.0
    return result


def paraphrase_candidates(
    model: LoadedModel, split: EvalSplit, settings: DecodeConfig, k: int, beam_width: int, seed: int,
    max_sources: int | None, progress: Progress, lowercase: bool = True,
) -> tuple[list[list[str]], list[str], list[list[str]]]:
    """(per source the K paraphrases, normalised sources, per source its normalised references), texts
    compared as `lowercase` normalised words (a PermGen bundle's own casing)."""
    outputs, sources, references = [], [], []
    for i, (source, reference) in enumerate(split.pairs[: sources_of(split, max_sources)]):
        refs = split.references[i] if split.references else [reference]
        request = GenerationRequest(task="paraphrase", prompt=source, n=k, decode=settings.with_seed(seed + i * k),
                                    beam_width=beam_width)
        variants = _candidates(model, request)
        outputs.append([" ".join(a.normalized for a in getattr(v, "alternatives", [])) for v in variants])
        sources.append(normalize(source, lowercase))
        references.append([normalize(r, lowercase) for r in refs])
        progress(1)
    return outputs, sources, references


def paraphrase_metrics(outputs: Sequence[Sequence[str]], sources: Sequence[str],
                       references: Sequence[Sequence[str]]) -> dict[str, float | None]:
    """POSG §5.3 for K paraphrases per source (see the module docstring)."""
    firsts = [group[0] for group in outputs]
    pooled = [o for group in outputs for o in group]
    repeated = [s for s, group in zip(sources, outputs, strict=True) for _ in group]
    result: dict[str, float | None] = {"bleu_4": paraphrase_bleu(firsts, references)}
    result.update(paraphrase_rouge(firsts, references))
    result["self_bleu_4_source"] = self_bleu_vs_source(pooled, repeated)
    result["self_wer_source"] = self_wer(pooled, repeated)
    several = all(len(group) > 1 for group in outputs)
    result["pairwise_self_bleu_4"] = pairwise_self_bleu([[o.split() for o in g] for g in outputs]) if several else None
    result["distinct_rewrites"] = distinct_rewrites(outputs, sources)
    result["distinct_word_rewrites"] = distinct_word_rewrites(outputs, sources)
    result["content_words_kept"] = content_words_kept(pooled, repeated)
    result["content_words_added"] = content_words_added(pooled, repeated)
    words = [o.split() for o in pooled]
    result.update({f"distinct_{n}": distinct_n_per_text(words, n) for n in (1, 2, 3)})
    result["distinct_corpus_2"] = distinct_n_corpus(words, 2)
    result["mean_words"] = sum(len(w) for w in words) / len(words)
    return result


def evaluate_seq2seq(
    bundle: PermGenBundle, split: EvalSplit, specs: Sequence[tuple[str, DecodeConfig]], k: int, beam_width: int,
    seed: int, max_sources: int | None, progress: Progress, train_words: frozenset[str] | None = None,
) -> dict[str, dict[str, float | None]]:
    """{decoder spec: metrics} for one PermGen bundle on a paragraph or paraphrase split (with `train_words`,
    also the invented- and unseen-word rates of every candidate's normalised words: real words are the
    training words, the word list and the words of the split's sources, engine/word_sources.py)."""
    task = bundle.model.config.task
    if task != split.task:
        raise ValueError(f"bundle {bundle.path} writes a {task!r}; split {split.name!r} evaluates {split.task!r}")
    # scored first: loaded to generate on the CPU, a model on the base keeps only float16 copies of its block weights,
    # whose product is slow for the thousands of rows a scored batch has (docs/decoding_speed.md)
    perplexity = {}
    if task != "paraphrase":
        with tqdm(total=len(split.examples), desc="perplexity", unit="paragraph", file=sys.stderr, position=1,
                  leave=False) as scoring:
            perplexity = split_perplexity(bundle, split, progress=scoring.update)
    model = PermGenLoadedModel(bundle, next(bundle.model.parameters()).device)
    model.use_training_words(train_words)
    result = {}
    for spec, settings in specs:
        if task == "paraphrase":
            outs, sources, refs = paraphrase_candidates(model, split, settings, k, beam_width, seed, max_sources,
                                                        progress, bundle.model.config.lowercase)
            result[spec] = paraphrase_metrics(outs, sources, refs)
            texts = [o for group in outs for o in group]
        else:
            variants, targets = paragraph_candidates(model, split, settings, k, beam_width, seed, max_sources,
                                                     progress)
            cands = [[paragraph_words(v, bundle.model.config.lowercase) for v in group] for group in variants]
            result[spec] = {**paragraph_metrics(cands, targets), **perplexity,
                            "title_word_repeated": title_word_repeated(split, variants),
                            "order_followed": order_followed(model, split, settings, k, seed,
                                                             sources_of(split, max_sources), progress)}
            texts = [" ".join(c) for group in cands for c in group]
        if train_words is not None:
            real = model.real_words().speller(source_texts(split, max_sources)).words.members
            result[spec].update(word_rates(texts, real, train_words))
    return result


def source_texts(split: EvalSplit, max_sources: int | None) -> list[str]:
    """The writer's texts of the decoded sources: titles and keywords, or the passages to paraphrase."""
    count = sources_of(split, max_sources)
    if split.task == "paraphrase":
        return [source for source, _ in split.pairs[:count]]
    return [text for e in split.examples[:count] for text in (e.title, *e.keywords)]


def human_seq2seq(split: EvalSplit, max_sources: int | None, lowercase: bool = True) -> dict[str, Any]:
    """The human row: the references' own corpus diversity (no K candidates: no pairwise metrics)."""
    count = sources_of(split, max_sources)
    if split.task == "paraphrase":
        pairs = split.pairs[:count]
        refs = [normalize(t, lowercase).split() for _, t in pairs]
        sources = [normalize(s, lowercase) for s, _ in pairs]
        texts = [" ".join(r) for r in refs]
        return {"self_bleu_4_source": self_bleu_vs_source(texts, sources), "self_wer_source": self_wer(texts, sources),
                "content_words_kept": content_words_kept(texts, sources),
                "content_words_added": content_words_added(texts, sources),
                **{f"distinct_{n}": distinct_n_per_text(refs, n) for n in (1, 2, 3)},
                "distinct_corpus_2": distinct_n_corpus(refs, 2), "mean_words": sum(map(len, refs)) / len(refs),
                "sources": count}
    targets = [normalize(" ".join(e.sentences), lowercase).split() for e in split.examples[:count]]
    return {**corpus_diversity(targets), "title_word_repeated": human_title_word_repeated(split, count),
            "sources": count}


def run_seq2seq(
    args: argparse.Namespace, config: ProtocolConfig, split: EvalSplit
) -> tuple[list[Any], dict[str, Any]]:
    """The paragraph or paraphrase protocol for every bundle of `variorum eval` (each doing the split's
    task, engine/evaluation/run.py) → (entries, human row)."""
    bundles = [load_permgen_bundle(path, resolve_device(args.device)) for path in args.bundles]
    for bundle in bundles:
        check_decoders(bundle.model.head.capabilities(), config.decoders)
    passes = 1 if split.task == "paraphrase" else 2  # paragraphs: the model's own order, then an asked one
    total = sources_of(split, config.max_sources) * len(config.decoders) * len(bundles) * passes
    entries = []
    with tqdm(total=total, desc="eval", unit="source", file=sys.stderr) as bar:
        for bundle in bundles:
            bar.set_postfix_str(display_name(bundle.path))
            # max_new_tokens = the model's sentence length: each sentence stops at the model's own cap
            specs = [(spec, parse_decoder(spec, bundle.model.config.max_sentence_len)) for spec in config.decoders]
            words = None if args.no_invented_words else known_training_words(bundle.path, args.train_files)
            result = evaluate_seq2seq(bundle, split, specs, config.candidates, config.beam_width, config.seed,
                                      config.max_sources, bar.update, words)
            entries.append(seq2seq_entry(bundle, split, {"seq2seq": result}))
    return entries, {"seq2seq": human_seq2seq(split, config.max_sources, bundles[0].model.config.lowercase)}


def held_out_seq2seq(bundle: PermGenBundle, split: EvalSplit) -> bool | None:
    """True if the bundle trained on none of the split's files; None if it did (PermGen does not record
    whether its held-out part was a hash split or other files) or its provenance has no file list."""
    trained = {Path(f).name for f in bundle.provenance.get("train", {}).get("train_files", [])}
    return None if not trained or trained & {Path(f["path"]).name for f in split.files} else True


def seq2seq_entry(bundle: PermGenBundle, split: EvalSplit, result: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": display_name(bundle.path), "path": str(bundle.path), "head": bundle.model.config.model.head,
        "task": bundle.model.config.task, "permute": bundle.model.config.permute,
        "sha256": file_sha256(bundle.path / "model.safetensors"),
        "config_sha256": file_sha256(bundle.path / "config.json"),
        "held_out": held_out_seq2seq(bundle, split), "result": result,
    }
