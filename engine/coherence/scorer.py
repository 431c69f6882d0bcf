"""A coherence scorer: a language model plus the linear score fitted on its features, saved as a small folder.

The folder holds `scorer.json` (which language-model bundle it reads, that bundle's fingerprint, the token
budgets and how it was measured) and `scorer.safetensors` (the standardisation and weights of
engine/coherence/fit.py). The language model is not copied: it is found by bundle name in the given model
folders and must have the recorded fingerprint, since weights fitted on one model's hidden states mean
nothing on another's.

A fingerprint names the weights, not where they are: for a bundle imported from a checkpoint (the pretrained
base) the sha256 of its architecture and its checkpoint's weights hashes (the GGUF's, for the base), the same
on every machine whatever folder it was installed in; for any other bundle the sha256 of its
`model.safetensors`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

from engine.bundles.bundle import WEIGHTS_FILE, load_bundle, read_bundle_config
from engine.coherence.features import FeatureLimits, continuation_features, feature_width
from engine.coherence.fit import LinearScore
from engine.data.corpus import file_sha256
from engine.files.atomic_writes import atomic_directory
from engine.files.small_reads import UnusableFileError, read_small_json
from engine.model import LanguageModel
from engine.packed_linear import HalfWeight
from engine.tokenizer import VariorumTokenizer

SCORER_FILE = "scorer.json"
WEIGHTS = "scorer.safetensors"
KIND = "coherence-scorer"


class ScorerUnavailableError(ValueError):
    """A scorer folder that cannot be used: unreadable, or its language model is missing or different."""


def model_fingerprint(bundle: Path) -> str:
    """The fingerprint of a language-model bundle (see the module docstring)."""
    config = read_bundle_config(bundle)
    base = config.get("base")
    if isinstance(base, dict) and isinstance(base.get("weights_sha256"), dict):
        weights = sorted(map(str, base["weights_sha256"].values()))
        identity = {"architecture": base.get("architecture"), "weights": weights}
        return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()
    return file_sha256(bundle / WEIGHTS_FILE)


@dataclass(frozen=True)
class ScorerRecord:
    """What `scorer.json` says: the language model, its fingerprint, the budgets and the measurements."""

    language_model: str  # a bundle name, looked for in the model folders
    fingerprint: str
    limits: FeatureLimits
    measured: dict[str, Any]  # e.g. Story Cloze accuracy, the L2 strength chosen; shown in docs, not used


class CoherenceScorer:
    """Scores continuations of one prompt for sense: higher fits the prompt better (a log-odds scale)."""

    def __init__(self, model: LanguageModel, tokenizer: VariorumTokenizer, score: LinearScore,
                 record: ScorerRecord) -> None:
        self.model, self.tokenizer, self.score, self.record = model, tokenizer, score, record

    def __call__(self, prompt: str, continuations: Sequence[str]) -> list[float]:
        """One score per continuation of `prompt` (each as the text a writer would append)."""
        if not continuations:
            return []
        features = continuation_features(self.model, self.tokenizer, [prompt] * len(continuations),
                                         list(continuations), self.record.limits)
        return [float(value) for value in self.score(features)]


def share_equal_weights(model: torch.nn.Module, source: torch.nn.Module) -> int:
    """Point each parameter of `model` that equals `source`'s of the same name at `source`'s storage, so that
    a scorer reading the pretrained base beside a model adapted from it (which keeps the base's embedding and
    first blocks bit for bit) holds those weights once. Returns the number of values now shared."""
    theirs = dict(source.named_parameters())
    shared = _share_half(model, source)
    with torch.no_grad():
        for name, mine in list(model.named_parameters()):
            other = theirs.get(name)
            if other is None or other.shape != mine.shape or other.dtype != mine.dtype or other.device != mine.device:
                continue
            if other.is_mkldnn or mine.is_mkldnn:  # a model loaded to generate keeps a packed copy only
                shared += _share_packed(model, name, mine, other)
            elif other.data_ptr() == mine.data_ptr() or torch.equal(other, mine):  # shared already, or equal
                mine.data = other.data
                shared += mine.numel()
    return shared


def _share_packed(model: torch.nn.Module, name: str, mine: torch.Tensor, other: torch.nn.Parameter) -> int:
    """Make `model`'s parameter `name` the source's packed one (engine/packed_linear.py `keep_packed_only`) where
    it holds the same numbers; a packed copy cannot lend its storage, so the parameter itself is shared (the
    scorer reads it under no_grad, through the same packed products). Returns the values now shared."""
    if mine is other or mine.is_mkldnn or not torch.equal(other.to_dense(), mine):
        return mine.numel() if mine is other else 0
    owner, _, leaf = name.rpartition(".")
    setattr(model.get_submodule(owner), leaf, other)
    return mine.numel()


def _share_half(model: torch.nn.Module, source: torch.nn.Module) -> int:
    """Give each float32 layer of `model` the float16 copy (engine/packed_linear.py `HalfWeight`) that `source`'s
    layer of the same name keeps instead of its weight, where the layer's weight rounds to it; the scorer then
    reads those products with float16-rounded weights, as the generating model does. Returns the values shared."""
    modules = dict(model.named_modules())
    shared = 0
    with torch.no_grad():
        for name, theirs in source.named_modules():
            half, mine = getattr(theirs, "weight", None), modules.get(name)
            if not isinstance(half, HalfWeight) or mine is None:
                continue
            weight = getattr(mine, "weight", None)
            if (isinstance(weight, torch.nn.Parameter) and weight.shape == half.shape and weight.dtype == torch.float32
                    and torch.equal(weight.half().float(), half.to_dense())):
                del mine.weight
                mine.weight = half
                shared += weight.numel()
    return shared


def save_scorer(folder: Path, score: LinearScore, record: ScorerRecord) -> None:
    """Write the scorer folder atomically (a half-written scorer never replaces a good one)."""
    with atomic_directory(folder) as staging:
        save_file({"mean": score.mean.contiguous(), "std": score.std.contiguous(),
                   "weights": score.weights.contiguous()}, str(staging / WEIGHTS))
        text = json.dumps({"kind": KIND, **asdict(record)}, indent=2, sort_keys=True)
        (staging / SCORER_FILE).write_text(text + "\n", encoding="utf-8")


def read_scorer_record(folder: Path) -> ScorerRecord:
    """The scorer's `scorer.json`, checked; ScorerUnavailableError says what is wrong."""
    try:
        data = read_small_json(folder / SCORER_FILE, "coherence scorer")
    except UnusableFileError as error:
        raise ScorerUnavailableError(str(error)) from None
    if not isinstance(data, dict) or data.get("kind") != KIND:
        raise ScorerUnavailableError(f"{folder / SCORER_FILE} is not a coherence scorer's description")
    try:
        limits = FeatureLimits(**data["limits"])
        record = ScorerRecord(str(data["language_model"]), str(data["fingerprint"]), limits,
                              dict(data.get("measured", {})))
    except (KeyError, TypeError, ValueError) as error:
        raise ScorerUnavailableError(f"{folder / SCORER_FILE}: a field is missing or wrong ({error})") from None
    if not all(isinstance(v, int) and v > 0 for v in asdict(limits).values()):
        raise ScorerUnavailableError(f"{folder / SCORER_FILE}: token budgets must be positive whole numbers")
    return record


def find_language_model(record: ScorerRecord, model_dirs: Sequence[Path]) -> Path:
    """The bundle the scorer reads: named `record.language_model` in one of `model_dirs`, with its fingerprint."""
    for directory in model_dirs:
        bundle = directory / record.language_model
        if (bundle / "config.json").is_file():
            if model_fingerprint(bundle) != record.fingerprint:
                raise ScorerUnavailableError(
                    f"the coherence scorer was fitted on another version of {record.language_model} ({bundle})")
            return bundle
    raise ScorerUnavailableError(f"the coherence scorer needs the model {record.language_model}, which is not "
                                 "installed")


def load_scorer(folder: Path, model_dirs: Sequence[Path], device: str | torch.device = "cpu") -> CoherenceScorer:
    """The scorer of `folder` with its language model loaded on `device`."""
    record = read_scorer_record(folder)
    bundle = load_bundle(find_language_model(record, model_dirs), device)
    if not isinstance(bundle.model, LanguageModel):
        raise ScorerUnavailableError(f"{record.language_model} is not a language model")
    try:
        tensors = load_file(str(folder / WEIGHTS))
        score = LinearScore(tensors["mean"], tensors["std"], tensors["weights"])
    except (OSError, KeyError, ValueError) as error:
        raise ScorerUnavailableError(f"{folder / WEIGHTS} cannot be read ({error})") from None
    expected = feature_width(bundle.model)
    if any(t.shape != (expected,) for t in (score.mean, score.std, score.weights)):
        raise ScorerUnavailableError(f"{folder / WEIGHTS} does not match {record.language_model}'s width")
    return CoherenceScorer(bundle.model, bundle.tokenizer, score, record)
