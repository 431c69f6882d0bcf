"""The paraphrase protocol for language-model bundles, which paraphrase by rewording (engine/rewording).

`variorum eval --split turkcorpus --bundles <language model>` decodes each source through the app's
own path (`LanguageLoadedModel.stream`, task "paraphrase") and scores the K candidates with the same
metrics as a PermGen paraphrase bundle (engine/evaluation/seq2seq.py `paraphrase_metrics`: BLEU-4
to the references, Self-BLEU / Self-WER to the source, pairwise Self-BLEU, distinct rewrites,
content words kept), on lowercased normalised words. Rewording writes only WordNet words and the
writer's own, so its invented-word rate is measured like a PermGen bundle's, against the model's
training words, the word list and the sources.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from tqdm import tqdm

from engine.bundles.bundle import read_bundle_config
from engine.bundles.words import known_training_words
from engine.data.corpus import file_sha256
from engine.devices import resolve_device
from engine.evaluation.decoders import parse_decoder
from engine.evaluation.protocols import ProtocolConfig
from engine.evaluation.report import display_name
from engine.evaluation.seq2seq import (
    human_seq2seq,
    paraphrase_candidates,
    paraphrase_metrics,
    source_texts,
    sources_of,
)
from engine.evaluation.splits import EvalSplit
from engine.front_door import Engine
from engine.metrics.invented import word_rates

SENTENCE_TOKENS = 64  # no rewording is longer than its source; the cap only bounds a decoder spec's length


def run_rewording(args: argparse.Namespace, config: ProtocolConfig,
                  split: EvalSplit) -> tuple[list[Any], dict[str, Any]]:
    """The paraphrase protocol for every language-model bundle of `variorum eval` → (entries, human row)."""
    if config.beam_width > 1:
        raise ValueError("beam search does not apply to rewording; evaluate a language model with --beam-width 1")
    total = sources_of(split, config.max_sources) * len(config.decoders) * len(args.bundles)
    entries = []
    with tqdm(total=total, desc="eval", unit="source", file=sys.stderr) as bar:
        for path in args.bundles:
            bar.set_postfix_str(display_name(path))
            model = Engine().load(path, device=str(resolve_device(args.device)), runtime="torch")
            words = None if args.no_invented_words else known_training_words(path, args.train_files)
            model.use_training_words(words)
            result = {}
            for spec in config.decoders:
                settings = parse_decoder(spec, SENTENCE_TOKENS)
                outs, sources, refs = paraphrase_candidates(model, split, settings, config.candidates, 1,
                                                            config.seed, config.max_sources, bar.update)
                result[spec] = paraphrase_metrics(outs, sources, refs)
                if words is not None:
                    real = model.real_words().speller(source_texts(split, config.max_sources)).words.members
                    result[spec].update(word_rates([o for group in outs for o in group], real, words))
            entries.append({
                "name": display_name(path), "path": str(path), "head": read_bundle_config(path)["model"]["head"],
                "task": "paraphrase", "permute": False, "sha256": file_sha256(path / "model.safetensors"),
                "config_sha256": file_sha256(path / "config.json"), "held_out": True, "result": {"seq2seq": result},
            })
    return entries, {"seq2seq": human_seq2seq(split, config.max_sources)}
