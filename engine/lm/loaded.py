"""A language-model bundle loaded for generating: `LanguageLoadedModel` and the runtime its backbone runs on.

`Engine.load` (engine/front_door.py) returns this for a bundle of kind "lm", through the family
(engine/lm/family.py). Torch on a GPU replays a recorded bf16 step; `choose_lm_runtime` resolves
the ONNX runtimes (engine/onnx/runtime.py) to the exported decoder step behind the backbone-runner seam.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from engine.bundles.bundle import Bundle
from engine.coherence.choice import choose_scorer
from engine.controls import LM_TASKS, Capabilities
from engine.decoding import DecodeConfig, DecodeStream
from engine.decoding.backbone_runner import BackboneRunner
from engine.decoding.guidance import refuse_guidance
from engine.decoding.runtime_choice import RUNNERS
from engine.lm.family import lm_tasks
from engine.loaded_model import GenerationRequest, LoadedModel
from engine.model import LanguageModel
from engine.packed_linear import keep_packed_weights_only
from engine.prompt_join import stream_after_prompt
from engine.selection.stream import ScorerChoice
from engine.tokenizer import VariorumTokenizer
from engine.word_sources import RealWordVocabulary

if TYPE_CHECKING:  # onnxruntime's runner loads only when a bundle runs on it
    from engine.onnx.runner import OnnxBackboneRunner
    from engine.onnx.runtime import RuntimeChoice


class LanguageLoadedModel(LoadedModel):
    """A language-model bundle loaded on a device, ready to continue text."""

    runner: BackboneRunner[Any] | None = None  # None: the torch model itself

    def __init__(self, bundle: Bundle, device: torch.device, runtime: str = "torch") -> None:
        """`runtime`: auto / torch / onnx (engine/onnx/runtime.py). Torch on a GPU replays a recorded
        bf16 step (engine/decoding/graphed_step.py) when it passes its load-time check."""
        self.bundle = bundle
        self.device = device
        self.tasks = lm_tasks()  # read once: the app asks for capabilities on every control change
        if runtime != "torch":
            config = bundle.model.config
            choice = choose_lm_runtime(bundle.path, config.block_size, config.n_embd, runtime, device)
            self.runtime, self.runner, self.runtime_note = choice.name, choice.runner, choice.note
        # auto on a CPU: the export is used only where it measures faster than torch (engine/decoding/runtime_choice.py)
        self.measure_runtime = runtime == "auto" and self.runner is not None and device.type == "cpu"
        self.export_runtime = self.runtime
        if self.runner is None and device.type == "cuda":
            from engine.decoding.graphed_step import graphed_runtime

            graphed, note = graphed_runtime(bundle.model.backbone)
            if graphed is not None:
                self.runtime, self.runner = graphed.name, graphed
            self.runtime_note = "; ".join(filter(None, [self.runtime_note, note]))
        if device.type == "cpu":  # torch decodes here too when auto measures it faster than the export
            from engine.onnx.session import exported

            # float16 block weights only where no export is there to write the same text for a seed in float32
            keep_packed_weights_only(bundle.model, half=not exported(bundle.path))
        self._warm_up()

    def _warm_up(self) -> None:
        """One two-token decode of two rows while loading, on the weights decoding will read, so the first
        request's first token does not wait for packing weights (engine/packed_linear.py) or setting up kernels."""
        list(stream_after_prompt(self.bundle.model, self.bundle.tokenizer, "", 2,
                                 DecodeConfig(max_new_tokens=2, seed=0), runner=self.runner))

    @property
    def capabilities(self) -> Capabilities:
        """Which controls this model honours (engine/controls.py): the CLI, the app and eval read this."""
        return Capabilities(self.bundle.model.head.capabilities(), self.tasks,
                            decode_starts=self.bundle.decode_starts)

    def stream_rows(self, request: GenerationRequest, rows: int,
                    should_stop: Callable[[], bool] | None = None) -> DecodeStream:
        if request.task == "paraphrase":
            return self._reword(request, should_stop)
        if request.task not in LM_TASKS:
            raise ValueError(f"this model can only continue text; task {request.task!r} needs a model trained for it")
        if request.beam_width > 1:
            raise ValueError("beam search is for story / abstract / paraphrase models; a language model samples")
        # Encoded without trailing whitespace; variants come back ready to append (engine/prompt_join.py).
        return stream_after_prompt(
            self.bundle.model, self.bundle.tokenizer, request.prompt, rows, request.decode, should_stop,
            self._runner_for(rows), self.speller(request),
        )

    def _runner_for(self, rows: int) -> BackboneRunner[Any] | None:
        """The runner a decode of `rows` rows uses: with runtime auto on a CPU, the measured faster one."""
        if not self.measure_runtime or self.runner is None:
            return self.runner
        chosen = RUNNERS.runner(self.bundle.model, rows, self.runner)
        self.runtime = self.export_runtime if chosen is not None else "torch (measured faster than the ONNX export)"
        return chosen

    def prepare(self, task: str) -> None:
        """Paraphrase: load spaCy's parser and WordNet's files (seconds) before the first request."""
        if task == "paraphrase" and task in self.tasks:
            from engine.rewording.stream import load_rewording

            load_rewording()

    def _reword(self, request: GenerationRequest, should_stop: Callable[[], bool] | None) -> DecodeStream:
        """The passage in `request.prompt` paraphrased by rewording (engine/rewording/stream.py)."""
        from engine.rewording import WordNetMissingError
        from engine.rewording.stream import RewordStream

        if "paraphrase" not in self.tasks:
            raise WordNetMissingError("Paraphrasing with a language model needs WordNet's files, lemminflect and "
                                      "spaCy's English model: .ci/setup-venv pos (or pip install 'variorum[pos]')")
        if not request.prompt.strip():
            raise ValueError("give the passage to paraphrase (the selected text)")
        if request.beam_width > 1:
            raise ValueError("beam search does not apply to rewording; a language model picks rewordings by seed")
        refuse_guidance(request.decode)
        return RewordStream(self.bundle.model, self.bundle.tokenizer, request.prompt, request.n, request.decode,
                            should_stop)

    def drafts_scorer(self) -> ScorerChoice:
        """The shipped scorer, else this model's own pmi (engine/coherence/choice.py)."""
        return choose_scorer((self.bundle.model, self.bundle.tokenizer), self.device)

    @property
    def bundle_path(self) -> Path:
        return self.bundle.path

    def _real_word_vocabulary(self, training: frozenset[str] | None) -> RealWordVocabulary:
        return lm_vocabulary(training, self.bundle.tokenizer, self.device)

    def group_names(self) -> list[str]:
        """Labels of the head's sampling groups (POS tags, frequency classes, …) for colouring tokens."""
        return self.bundle.model.head.group_names()

    def token_counts(self) -> list[int]:
        """Training-set count of every token id (the frequency classes the app colours by)."""
        return [int(c) for c in self.bundle.tokenizer.counts]


def choose_lm_runtime(bundle_dir: Path, block_size: int, n_embd: int, runtime: str,
                      device: torch.device) -> RuntimeChoice[OnnxBackboneRunner]:
    """Resolve `runtime` for a language-model bundle (engine/onnx/runtime.py): its ONNX runner is the
    exported decoder step (GPT-2 or Llama) behind the backbone-runner seam."""
    from engine.onnx.runner import OnnxBackboneRunner
    from engine.onnx.runtime import choose_runtime

    return choose_runtime(bundle_dir, LanguageModel.kind, runtime, device,
                          lambda graphs: OnnxBackboneRunner(graphs, block_size, n_embd))


def lm_vocabulary(training: frozenset[str] | None, tokenizer: VariorumTokenizer,
                  device: torch.device) -> RealWordVocabulary:
    """A language model's real words: text as typed; eos ends a word."""
    return RealWordVocabulary(training, tokenizer.piece_bytes(), [tokenizer.eos_id], device)
