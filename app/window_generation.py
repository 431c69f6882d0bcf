"""Main-window behaviour for generating: load a model, Generate/Stop/Regenerate, stream into panes,
history, token colouring."""

from __future__ import annotations

import copy
import dataclasses
import random
import time
from pathlib import Path
from typing import Any

from app.controls.modes import MODES, ModeError, build_request
from app.controls.spec import decode_config
from app.controls.values import clean_control_values
from app.editor.document import DocumentEditor
from app.editor.history import Batch
from app.variants.labels import LabelSource
from app.variants.pane import VariantPane
from app.variants.progress import done_words, drafting_words, duration_words, share_written, writing_words
from app.window_base import WindowBase
from app.worker import BackgroundCall, GenerationOutcome
from engine.decode_fields import MAX_SEED, SEED
from engine.front_door import GenerationRequest, LoadedModel, TokenEvent, can_tag_words, tag_words

SUMMARY_CHARS = 40
INPUTS_KEY = "inputs"  # a batch's mode inputs (title, keywords, sentences, order) in its recorded settings


class GenerationMixin(WindowBase):
    """Part of MainWindow (its bases: FilesMixin, ModelsMixin, GenerationMixin); `self` is the window."""

    model: LoadedModel | None  # None until a bundle has loaded
    model_name: str  # the loaded model's folder name ("" until one has loaded), kept with each batch
    labels: LabelSource | None  # colour labels for the loaded model
    _loader: BackgroundCall | None  # the bundle load in flight (kept so it is not collected)
    _preparer: BackgroundCall | None  # what a mode needs beyond the weights, loading (`LoadedModel.prepare`)
    _batch_editor: DocumentEditor | None  # the document the running batch belongs to
    _tagger_call: BackgroundCall | None  # the POS tagging in flight for colouring
    _load_started = 0.0  # when the latest model load began (perf_counter)
    _loading_path: Path | None = None  # the bundle the latest load is for

    # --- model -------------------------------------------------------------------------------------
    def load_bundle(self, path: Path) -> None:
        """Load the bundle at `path` in the background; a load started later wins over one still running."""
        if self.generator.running:
            self.generator.stop()
        device, runtime = self.controls.model.device_name(), self.controls.model.runtime_name()
        self.controls.model.set_busy(True, f"Loading {path.name}…")
        self.show_activity(f"Loading the model {path.name}… You can write meanwhile.", busy=True)
        self._load_started = time.perf_counter()
        info = next((b for b in self.controls.model.bundles if Path(b.path) == Path(path)), None)
        self.controls.mode.set_loading(set(info.tasks) if info is not None else set())  # its modes wait, no error
        loader = BackgroundCall(lambda: self.engine.load(path, device, runtime), self)
        loader.done.connect(lambda model: self._on_loaded(path, model) if loader is self._loader else None)
        loader.failed.connect(lambda message: self._on_load_failed(path, message) if loader is self._loader else None)
        self._loader, self._loading_path = loader, Path(path)
        loader.start()

    def _is_loading(self, path: Path) -> bool:
        """True while the bundle at `path` is the one loading."""
        return self._loader is not None and self._loader.running and self._loading_path == Path(path)

    def load_model_for_mode(self, mode: str) -> None:
        """The writer picked `mode`: load its model unless the loaded one can do it already."""
        if self.model is not None and mode in self.model.capabilities.tasks:
            self._prepare(self.model, mode)
            return
        info = self.controls.model.bundle_for_mode(mode)
        if info is not None and not self._is_loading(Path(info.path)):  # already on its way: nothing to restart
            self.controls.model.select(info)
            self.load_bundle(Path(info.path))

    def _on_loaded(self, path: Path, model: LoadedModel) -> None:
        self.model = model
        self.model_name = path.name
        self.labels = LabelSource(model)
        capabilities = model.capabilities
        self.controls.model.set_busy(False)
        self.controls.mode.set_loading(set())
        self.controls.model.set_status(f"{path.name} is ready.")
        took = duration_words(time.perf_counter() - self._load_started)
        self.show_activity(f"{path.name} is ready (loaded in {took}).")
        self.controls.model.status.setToolTip(f"Loaded on {model.device.type.upper()} with {model.runtime}.")
        if model.runtime_note:  # a faster runtime could not be used: say so once, the engine's reason in the tooltip
            self.add_notice(f"{path.name} runs the standard way here: its faster version could not be used. "
                            "The text is the same; writing may be slower.", model.runtime_note)
        self.controls.mode.set_capabilities(capabilities)
        self.controls.decode.set_capabilities(capabilities)
        self.variants.set_group_mode_available(capabilities.head.groups > 1)
        self.variants.set_pos_mode_available(capabilities.pos_guided or can_tag_words())
        self.settings.last_bundle = str(path)
        self.settings_changed()
        self.model_label.setText(f"Model: {path.name} ({model.device.type})")
        self._prepare(model, self.controls.mode.mode())

    def _prepare(self, model: LoadedModel, mode: str) -> None:
        """Let `model` load what `mode` needs beyond its weights (a parser, word lists) in the background, so
        the first Generate in that mode does not wait for it; a failure shows when the writer generates."""
        if mode in model.capabilities.tasks:
            self._preparer = BackgroundCall(lambda: model.prepare(mode), self)
            self._preparer.start()

    def _on_load_failed(self, path: Path, message: str) -> None:
        self.controls.model.set_busy(False)
        self.controls.mode.set_loading(set())
        self.controls.model.set_status(f"Could not load {path.name}.", error=True)
        self.show_activity(f"Could not load {path.name}.")
        self.show_error(f"Could not load the model {path.name}: {message}")

    # --- generate ----------------------------------------------------------------------------------
    def generate(self) -> bool:
        """Start a batch for the current mode; False (with a message) when it cannot start."""
        request = self._request()
        if request is None:
            return False
        editor = self.tabs.current()
        targets = self.variants.prepare(request.n)
        self.side_tabs.setCurrentWidget(self.variants)  # the new variants are what the writer wants to see
        return self._start(request, targets, editor, new_batch=True)

    def regenerate(self, pane: VariantPane) -> bool:
        """Write one pane again with a fresh random seed and the current settings."""
        if pane not in self.variants.panes:
            return False
        request = self._request(n=1)
        if request is None:
            return False
        request = dataclasses.replace(request, decode=request.decode.with_seed(random.randrange(MAX_SEED + 1)))
        pane.reset()
        return self._start(request, [self.variants.panes.index(pane)], self.tabs.current(), new_batch=False)

    def _request(self, n: int | None = None) -> GenerationRequest | None:
        if self.generator.running:
            self.show_error("Variants are still being written; press Stop (Esc) first.")
            return None
        if self.model is None:
            self.show_error("No model is loaded yet. Pick a model in the Model box (it may still be loading).")
            return None
        reason = self.controls.mode.unavailable_reason()
        if reason:  # said as the mode box says it
            self.show_error(reason)
            return None
        values = self.controls.decode.values()
        capabilities = self.model.capabilities
        editor = self.tabs.current()
        inputs = self.controls.mode.inputs()
        if editor is not None:
            inputs.text_before_cursor = editor.text_before_cursor()
            inputs.selection = editor.selection_text()
            inputs.document = editor.toPlainText()
        try:
            decode = decode_config(values, capabilities, self.controls.mode.mode())
            return build_request(self.controls.mode.mode(), inputs, n or int(values["n"]), decode, capabilities)
        except (ModeError, ValueError) as error:
            self.show_error(str(error))
            return None

    def _start(self, request: GenerationRequest, targets: list[int], editor: DocumentEditor | None,
               new_batch: bool) -> bool:
        self._batch_editor = editor
        self._batch_plan = self.controls.mode.plan_values()  # recorded with the batch: "Use its settings" restores it
        self._new_batch = new_batch
        self._batch_request: tuple[GenerationRequest, list[int]] | None = (request, targets)
        self._batch_model = self.model_name
        self._first_token_at: float | None = None
        assert self.model is not None  # _request() returned a request, so a model is loaded (it is never unloaded)
        self.generator.start(self.model, request, targets)
        self.controls.set_running(True)
        self.variants.set_busy(True, targets)
        self._show_writing(request, targets)
        return True

    def _show_writing(self, request: GenerationRequest, targets: list[int]) -> None:
        """The status line while a batch is written: speed and time left, with a bar filling up."""
        panes = self.variants.panes
        states = [panes[i].state for i in targets if i < len(panes)]
        tokens, elapsed = self.generator.progress()
        drafted, choosing = self.generator.drafting()
        if (drafted or choosing) and not any(state.tokens for state in states):
            words, share = drafting_words(request, drafted, choosing, elapsed)
            self.show_activity(words, busy=True, share=share)
            return
        self.show_activity(writing_words(request, states, tokens, elapsed), busy=True,
                           share=share_written(request, states))

    def stop(self) -> None:
        if self.generator.running:
            self.generator.stop()
            self.statusBar().showMessage("Stopping…")
        elif self.find_bar.isVisible():
            self.find_bar.hide()

    def shutdown_workers(self) -> None:
        """Quitting: stop the generation and wait for every worker thread, so no torch call outlives the app."""
        self.generator.shutdown()
        for call in (self._loader, self._tagger_call, self._preparer):
            if call is not None:
                call.wait()

    def _on_tokens(self, batch: list[tuple[int, TokenEvent]]) -> None:
        if self._first_token_at is None:
            self._first_token_at = time.perf_counter()
        touched: set[int] = set()
        for index, event in batch:
            if index < len(self.variants.panes):
                self.variants.panes[index].state.add(event)
                touched.add(index)
        for index in touched:
            pane = self.variants.panes[index]
            pane.show_text()
            pane.refresh_header()
        if self.generator.running and self._batch_request is not None:
            self._show_writing(*self._batch_request)

    def _on_finished(self, outcome: GenerationOutcome) -> None:
        panes = self.variants.panes
        for variant in outcome.variants:
            index = outcome.targets[variant.index]
            if index < len(panes):
                panes[index].state.complete(variant)
                panes[index].show_text()
                panes[index].refresh_header()
        self.controls.set_running(False)
        self.variants.set_busy(False)
        self.variants.update_diversity()
        if outcome.error:
            self.show_error(f"Generation failed: {outcome.error}. Your text is unchanged; try other settings.")
        self._batch_request = None
        self.show_activity(done_words(outcome.stopped, bool(outcome.error), outcome.tokens, outcome.seconds,
                                      len(outcome.targets)))
        self._record_batch(outcome)
        self.recolour()

    def _record_batch(self, outcome: GenerationOutcome) -> None:
        editor = self._batch_editor
        if editor is None or not outcome.variants:
            return
        states = [copy.deepcopy(self.variants.panes[i].state) for i in outcome.targets
                  if i < len(self.variants.panes)]
        request = outcome.request
        summary = (request.prompt or getattr(request, "title", ""))[-SUMMARY_CHARS:].replace("\n", " ")
        settings: dict[str, Any] = {"task": request.task, "n": request.n, **request.decode.to_dict(),
                                    INPUTS_KEY: self._batch_plan}
        if self._new_batch:
            editor.history.add(Batch(request.task, summary, settings, states, model=self._batch_model))
        elif editor.history.batches:  # a regenerated pane updates the latest batch
            latest = editor.history.batches[-1]
            latest.variants.append(states[0])
        self.keep_history(editor)
        self.refresh_history()

    def _batch(self, index: int) -> Batch | None:
        editor = self.tabs.current()
        if editor is None or not 0 <= index < len(editor.history.batches):
            return None
        return editor.history.batches[index]

    def restore_batch(self, index: int) -> None:
        """Show a past batch's variants again; the controls keep their current values."""
        batch = self._batch(index)
        if batch is None:
            return
        self.variants.show_states([copy.deepcopy(s) for s in batch.variants])
        self.side_tabs.setCurrentWidget(self.variants)  # the restored variants are what the writer asked to see
        self.show_activity("")  # the last batch's line is about other variants than these
        self.recolour()
        self.statusBar().showMessage(f"Restored batch from {batch.label()}", 5000)

    def use_batch_settings(self, index: int) -> None:
        """Set the controls to a past batch's settings (only when the writer asks). "Same variants each time"
        is as it was for the batch: on with the batch's seed when it had a fixed one (its recorded seed is
        None otherwise), off when every Generate drew new ones; then the batch's mode and model."""
        batch = self._batch(index)
        if batch is None:
            return
        recorded = {k: v for k, v in batch.settings.items() if k != INPUTS_KEY and not (k == SEED.name and v is None)}
        values, _ = clean_control_values(recorded)
        values["seed_fixed"] = SEED.name in values
        self.controls.decode.set_values(values)
        mode = str(batch.settings.get("task", batch.mode))
        inputs = batch.settings.get(INPUTS_KEY)
        if isinstance(inputs, dict):
            self.controls.mode.set_inputs(mode, inputs)
        self._load_batch_model(batch.model, mode)
        self.statusBar().showMessage(f"Controls set to the settings of {batch.label()}", 5000)

    def _load_batch_model(self, name: str, mode: str) -> None:
        """Load the model a batch was written with when it is still listed, else the mode's own model."""
        if mode not in MODES:
            return
        self.controls.mode.set_mode(mode)
        info = next((b for b in self.controls.model.bundles if b.name == name and not b.error), None)
        if info is None:
            self.load_model_for_mode(mode)
        elif name != self.model_name:
            self.controls.model.select(info)
            self.load_bundle(Path(info.path))

    def refresh_history(self) -> None:
        self.history_list.clear()
        editor = self.tabs.current()
        if editor is not None:
            self.history_list.addItems([f"{i}. {b.label()}" for i, b in enumerate(editor.history.batches, 1)])

    # --- colouring ---------------------------------------------------------------------------------
    def recolour(self) -> None:
        mode = self.variants.mode()
        if self.labels is None or mode == "none":
            self.variants.each(lambda p: p.apply_colours([]))
        elif self.labels.needs_tagger(mode):
            self._tag_and_colour()
            return
        else:
            source = self.labels
            self.variants.each(lambda p: p.apply_colours(source.labels(mode, p.state)))
        self.variants.update_legend()

    def _tag_and_colour(self) -> None:
        panes = list(self.variants.panes)
        texts = [p.state.text for p in panes]
        self.statusBar().showMessage("Tagging parts of speech…")
        self._tagger_call = BackgroundCall(lambda: tag_words(texts), self)
        self._tagger_call.done.connect(lambda tagged: self._apply_tags(panes, texts, tagged))
        self._tagger_call.failed.connect(self._tagging_failed)
        self._tagger_call.start()

    def _tagging_failed(self, message: str) -> None:
        """No tagger here after all: stop offering POS colours, so the error does not come back every batch."""
        self.statusBar().clearMessage()
        self.variants.set_pos_mode_available(False)
        self.show_error("Colouring by part of speech cannot be done in this copy of Variorum; the other "
                        "colourings still work.", message)

    def _apply_tags(self, panes: list[VariantPane], texts: list[str], tagged: list[Any]) -> None:
        self.statusBar().clearMessage()
        if self.labels is None or self.variants.mode() != "pos":
            return
        for pane, text, words in zip(panes, texts, tagged, strict=True):
            if pane in self.variants.panes and pane.state.text == text:
                pane.apply_colours(self.labels.labels("pos", pane.state, words))
        self.variants.update_legend()
