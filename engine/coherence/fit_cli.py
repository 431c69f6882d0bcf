"""`variorum fit-scorer`: fit the coherence scorer on Story Cloze val and measure it on Story Cloze test.

    variorum fit-scorer --val …/cloze_test_val__spring2016-cloze_test_ALL_val.tsv \\
        --test …/cloze_test_test__spring2016-cloze_test_ALL_test.tsv --out resources/scorers/coherence-smollm2

Features come from `--language-model` (default: the pretrained base as `variorum get-base` installs it) and
are cached in `--cache-dir` by file, story count and model fingerprint, so a second run only fits. Three
feature sets are fitted (engine/coherence/fit.py): the scalars alone (cond, uncond, pmi), the scalars with
the hidden mean read after the prompt, and everything. The set with the best cross-validated accuracy on
the val pairs is saved; the test split is only measured, never chosen on, and no model the scorer reads
may have trained on it. The zero-shot pmi accuracy is printed beside them, as the baseline.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

import torch

from engine.base_model import BASE_BUNDLE_NAME, default_models_dir
from engine.bundles.bundle import load_bundle
from engine.cli_errors import reports_user_errors
from engine.coherence.features import SCALARS, FeatureLimits, continuation_features
from engine.coherence.fit import LinearScore, fit_with_cv, pair_accuracy
from engine.coherence.scorer import ScorerRecord, model_fingerprint, save_scorer
from engine.coherence.story_cloze import ClozeStory, pair_texts, read_story_cloze
from engine.data.corpus import file_sha256
from engine.model import LanguageModel
from engine.tokenizer import VariorumTokenizer


def feature_sets(dim: int) -> dict[str, list[int]]:
    """Columns of each candidate feature set, for rows of width len(SCALARS) + 2·dim."""
    scalars = list(range(len(SCALARS)))
    return {"scalars": scalars, "scalars+hidden": scalars + list(range(len(SCALARS), len(SCALARS) + dim)),
            "all": list(range(len(SCALARS) + 2 * dim))}


def cached_features(
    bundle: Path, model: LanguageModel, tokenizer: VariorumTokenizer, path: Path, loaded: list[ClozeStory],
    cache_dir: Path, limits: FeatureLimits,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(feature rows [2S, F] with story i's endings at rows 2i and 2i + 1, right ending index [S]) of the stories
    `loaded` from `path`."""
    key = hashlib.sha256(f"{file_sha256(path)}{len(loaded)}{model_fingerprint(bundle)}{limits}".encode())
    cache = cache_dir / f"{path.stem}-{len(loaded)}-{key.hexdigest()[:12]}.pt"
    right = torch.tensor([s.right for s in loaded])
    if cache.is_file():
        return torch.load(cache, weights_only=True), right
    prompts, continuations = pair_texts(loaded)
    started = time.perf_counter()

    def progress(done: int) -> None:
        print(f"\r{path.name}: {done}/{len(prompts)} pairs, {time.perf_counter() - started:.0f} s", end="",
              file=sys.stderr, flush=True)

    features = continuation_features(model, tokenizer, prompts, continuations, limits, progress)
    print(file=sys.stderr)
    cache_dir.mkdir(parents=True, exist_ok=True)
    torch.save(features, cache)
    return features, right


def split_pairs(features: torch.Tensor, right: torch.Tensor, columns: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """(right-ending rows [S, C], wrong-ending rows [S, C]) over `columns`."""
    rows = features[:, columns].view(len(right), 2, len(columns))
    index = torch.arange(len(right))
    return rows[index, right], rows[index, 1 - right]


def widened(score: LinearScore, columns: list[int], width: int) -> LinearScore:
    """The score over full feature rows: zero weight on the columns the set leaves out."""
    mean, std, weights = torch.zeros(width), torch.ones(width), torch.zeros(width)
    mean[columns], std[columns], weights[columns] = score.mean, score.std, score.weights
    return LinearScore(mean, std, weights)


@reports_user_errors("fit-scorer")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="variorum fit-scorer", description=__doc__.splitlines()[0])
    parser.add_argument("--val", type=Path, required=True, help="Story Cloze val TSV: the pairs the fit learns from")
    parser.add_argument("--test", type=Path, required=True, help="Story Cloze test TSV: measured only")
    parser.add_argument("--out", type=Path, required=True, help="the scorer folder to write")
    parser.add_argument("--language-model", type=Path, default=default_models_dir() / BASE_BUNDLE_NAME)
    parser.add_argument("--val-stories", type=int, help="fit on the first N val stories (default: all)")
    parser.add_argument("--cache-dir", type=Path, default=Path("runs/coherence-features"))
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    val_stories = read_story_cloze(args.val)[: args.val_stories]  # bad files fail before the model loads
    test_stories = read_story_cloze(args.test)
    bundle = load_bundle(args.language_model)
    if not isinstance(bundle.model, LanguageModel):
        raise ValueError(f"{args.language_model} is not a language model")
    limits = FeatureLimits()
    val = cached_features(args.language_model, bundle.model, bundle.tokenizer, args.val, val_stories,
                          args.cache_dir, limits)
    test = cached_features(args.language_model, bundle.model, bundle.tokenizer, args.test, test_stories,
                           args.cache_dir, limits)
    pmi = SCALARS.index("pmi")
    report: dict[str, object] = {"val_stories": len(val[1]), "test_stories": len(test[1]),
                                 "zero_shot_pmi_test": pair_accuracy(LinearScore(torch.zeros(1), torch.ones(1),
                                                                                 torch.ones(1)),
                                                                     *split_pairs(*test, [pmi]))}
    best: tuple[float, str, LinearScore, list[int]] | None = None
    for name, columns in feature_sets(bundle.model.config.n_embd).items():
        score, fit = fit_with_cv(*split_pairs(*val, columns))
        cv = fit.cv_accuracy[fit.l2]
        report[name] = {"l2": fit.l2, "val_cv": round(cv, 4), "test": round(pair_accuracy(score, *split_pairs(
            *test, columns)), 4)}
        if best is None or cv > best[0]:
            best = (cv, name, score, columns)
    assert best is not None
    report["chosen"] = best[1]
    width = val[0].shape[1]
    record = ScorerRecord(args.language_model.name, model_fingerprint(args.language_model), limits,
                          {"story_cloze": report})
    save_scorer(args.out, widened(best[2], best[3], width), record)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
