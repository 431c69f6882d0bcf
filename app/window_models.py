"""Main-window behaviour for the models in the model box: list the bundles and the pretrained checkpoints of
the local Hugging Face caches, import a checkpoint the writer picks, and add a model folder from anywhere.

Importing reads and hashes a checkpoint's weights (seconds for GPT-2, longer from a slow disk) and listing a
large cache reads each model's tokenizer, so both run in a `BackgroundCall`; the model box shows it busy
and the message bar says what is happening, and the writer keeps writing. A failed import changes
nothing: the loaded model, the document and the list stay as they were, and the message bar gives the
engine's reason. A bundle folder added from elsewhere is remembered in the settings (`model_folders`),
so it is listed at the next start too; a checkpoint becomes a bundle in the user models folder, which
is listed anyway.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtWidgets import QFileDialog

from app.paths import dialog_folder
from app.window_generation import GenerationMixin
from app.worker import BackgroundCall
from engine.front_door import BundleInfo, CheckpointInfo


class ModelsMixin(GenerationMixin):
    """Part of MainWindow (its bases: FilesMixin, ModelsMixin, GenerationMixin); `self` is the window."""

    _importer: BackgroundCall | None  # the import (or folder check) in flight
    _checkpoint_scan: BackgroundCall | None  # the latest look through the caches; an older one's answer is stale

    def refresh_bundles(self) -> None:
        """At start: list the models, load the last one used (else Continue's), and name the unusable ones."""
        choice = self._list_models(self.settings.last_bundle)
        if choice is None:
            self.show_error(self.controls.model.status.text())
            return
        broken = [b for b in self.controls.model.bundles if b.error]
        if broken:
            self.add_notice("Skipped unusable model folder(s): " +
                            "; ".join(f"{b.path} ({b.error})" for b in broken) + ".")
        self.load_bundle(Path(choice.path))

    def _list_models(self, preferred: str) -> BundleInfo | None:
        """Fill the model box (bundles now, cached checkpoints when found); the bundle to load, if any."""
        bundles = self.engine.list_bundles([Path(folder) for folder in self.settings.model_folders])
        choice = self.controls.model.set_bundles(bundles, preferred)
        self.controls.mode.set_installed_tasks(self.controls.model.installed_tasks())
        scan = BackgroundCall(self.engine.importable_checkpoints, self)
        scan.done.connect(lambda found: self._on_checkpoints(scan, found))
        scan.failed.connect(lambda message: self.statusBar().showMessage(
            f"The pretrained checkpoints on this computer could not be listed: {message}", 8000))
        self._checkpoint_scan = scan
        scan.start()
        return choice

    def _on_checkpoints(self, scan: BackgroundCall, found: list[CheckpointInfo]) -> None:
        if scan is self._checkpoint_scan:
            self.controls.model.set_checkpoints(found)

    def import_checkpoint(self, name: str) -> None:
        """The writer picked the cached checkpoint `name` in the model box: import it, then load it."""
        self._add_model(f"Importing {name}", "reading its weights once; this can take a little while", name,
                        lambda: self.engine.import_checkpoint(name), picked=None)

    def add_model_folder_dialog(self) -> None:
        """"Add model from folder…": ask for a folder, then take it (`add_model_folder`)."""
        # beside the model folder added last, else in the writer's documents folder
        start = dialog_folder(Path(added).parent for added in reversed(self.settings.model_folders))
        folder = QFileDialog.getExistingDirectory(self, "Add model from folder", str(start))
        if folder:
            self.add_model_folder(Path(folder))

    def add_model_folder(self, folder: Path) -> None:
        """Take a folder the writer picked: a bundle is listed (and remembered) as it is, a pretrained checkpoint
        is imported into the user models folder; either is then loaded. Anything else: the engine's message."""
        self._add_model(f"Adding {folder.name}", "a pretrained checkpoint is imported first, which reads its "
                        "weights once", folder.name, lambda: self.engine.open_model_folder(folder), picked=folder)

    def _add_model(self, doing: str, why_slow: str, name: str, job: Callable[[], Path], picked: Path | None) -> None:
        """Run `job` (→ a bundle's folder) off the UI thread, saying `doing` meanwhile, then list and load that
        bundle. When the job returns the `picked` folder itself (a bundle, not an imported checkpoint), it is
        kept in the settings."""
        if any(call is not None and call.running for call in (self._importer, self._loader)):
            self.show_error(f"Wait until the model box is ready, then add {name} again: a model is still being "
                            "loaded or imported.")
            return
        self.controls.model.set_busy(True, f"{doing}…")
        self.show_activity(f"{doing}…", busy=True)
        self.messages.show_message(f"{doing} ({why_slow}). You can keep writing meanwhile.", "info")
        self._importer = BackgroundCall(job, self)
        self._importer.done.connect(lambda bundle: self._on_model_added(name, Path(bundle), picked))
        self._importer.failed.connect(lambda message: self._on_add_failed(name, message))
        self._importer.start()

    def _on_model_added(self, name: str, bundle: Path, picked: Path | None) -> None:
        self.controls.model.set_busy(False)
        if bundle == picked and str(bundle) not in self.settings.model_folders:
            self.settings.model_folders.append(str(bundle))  # list_bundles skips it when a models folder has it
            self.settings_changed()
        self._list_models(self.settings.last_bundle)
        info = next((b for b in self.controls.model.bundles if Path(b.path).resolve() == bundle.resolve()), None)
        if info is None or info.error:  # changed on disk since the check, or outside the folders listed from
            where = "it is no longer there" if not bundle.exists() else "it is not in a folder models are listed from"
            self.show_error(f"{name} was added as {bundle} but cannot be used now: {info.error if info else where}")
            return
        self.messages.show_message(f"{name} is one of your models now ({bundle}).", "info")  # the box says "Loading…"
        self.controls.model.select(info)
        self.load_bundle(Path(info.path))

    def _on_add_failed(self, name: str, message: str) -> None:
        self.controls.model.set_busy(False)
        self.controls.model.select_path(self.settings.last_bundle)  # the box shows the model still loaded
        self.controls.model.set_status(f"Could not add {name}.", error=True)
        self.show_activity(f"Could not add {name}.")
        self.show_error(f"Could not add {name} as a model: {message.rstrip('.')}. Your document and the model "
                        "you had are unchanged.")

    def shutdown_workers(self) -> None:
        """Quitting: also wait for an import, which builds the model in torch (see GenerationMixin)."""
        super().shutdown_workers()
        for call in (self._importer, self._checkpoint_scan):
            if call is not None:
                call.wait()
