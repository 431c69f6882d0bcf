"""Model picker (bundles from resources and the user data dir, with their card summary) and device choice.

Each mode has a model it starts with (engine/bundles/choice.py: the folder's defaults.json, else the
first usable bundle doing the task); the picker still lists every bundle, so a writer can pick another.
After the bundles it lists the pretrained checkpoints of the local Hugging Face caches not imported yet:
picking one asks the window to import it (`checkpoint_chosen`); "Add model from folder…" asks it to
take a folder the writer picks (`add_folder_clicked`)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QComboBox, QFormLayout, QGroupBox, QLabel, QProgressBar, QPushButton, QWidget

from app.theme import error_text_colour
from engine.bundles.choice import Defaults, choose_bundle, read_defaults
from engine.front_door import BundleInfo, CheckpointInfo, gpu_unavailable_reason
from engine.onnx import RUNTIMES

DEVICES = (("auto", "Automatic"), ("cpu", "CPU"), ("cuda", "GPU"))
TASK_WORDS = {  # what a model does, for the writer (its card's own words are the tooltip)
    "continue": "Writes on from your text.",
    "story": "Writes a short story from a title and keywords.",
    "abstract": "Writes an abstract from a title and keywords.",
    "paraphrase": "Rewrites the passage you select.",
}
PRETRAINED_WORDS = "Built on a pretrained model: the most natural writing; slower, and it needs more memory."
SMALL_WORDS = "A small model: fast and light, its writing rougher."
CHECKPOINT_ROLE = Qt.ItemDataRole.UserRole + 1  # a checkpoint item's cache name (bundle items hold their path)
RUNTIME_LABELS = {  # keys: engine.onnx.RUNTIMES
    "auto": "Automatic", "torch": "PyTorch", "onnx": "ONNX Runtime", "onnx-int8": "ONNX Runtime int8",
}


class ModelBox(QGroupBox):
    """Emits `bundle_chosen(path)` when the writer picks a usable bundle, `checkpoint_chosen(name)` for a
    cached checkpoint to import, `device_chosen(name)` for devices."""

    bundle_chosen = Signal(object)
    checkpoint_chosen = Signal(str)
    add_folder_clicked = Signal()
    device_chosen = Signal(str)
    runtime_chosen = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Model", parent)
        self.picker = QComboBox()
        self.picker.setAccessibleName("Model")
        self.picker.setToolTip("Which trained model writes the variants. Models come with the app, from your "
                               "own models folder, or from pretrained checkpoints on this computer (imported "
                               "when you pick one).")
        self.add_folder = QPushButton("Add model from folder…")
        self.add_folder.setToolTip("Use a model folder from anywhere on this computer: a Variorum model, or a "
                                   "pretrained GPT-2 checkpoint (saved with save_pretrained), which is imported "
                                   "into your models folder.")
        self.add_folder.clicked.connect(self.add_folder_clicked)
        self.device = QComboBox()
        self.device.setAccessibleName("Device")
        self.device.setToolTip("Where the model runs. Automatic uses the graphics card when one is usable.")
        self.gpu_reason = gpu_unavailable_reason()
        for key, label in DEVICES:
            self.device.addItem(label, key)
        if self.gpu_reason:
            index = self.device.findData("cuda")
            item = self.device.model().item(index)  # type: ignore[attr-defined]
            item.setEnabled(False)
            item.setToolTip(f"GPU unavailable: {self.gpu_reason}")
            self.device.setItemText(index, "GPU (unavailable)")
        self.runtime = QComboBox()
        self.runtime.setAccessibleName("Runtime")
        self.runtime.setToolTip("What runs the model. Automatic uses ONNX Runtime when the model has an ONNX "
                                "export (variorum export-onnx) and, for Continue on a CPU, it measures faster "
                                "than PyTorch for the number of variants asked (checked again when other "
                                "programs start or stop); PyTorch otherwise. ONNX "
                                "Runtime int8 is faster still on a CPU, for models whose export offers it "
                                "(quality checked within 2%); its wording differs a little for the same seed. "
                                "On a GPU, PyTorch runs a Continue model in bf16, which also words a seed a "
                                "little differently.")
        for key in RUNTIMES:
            self.runtime.addItem(RUNTIME_LABELS[key], key)
        self.summary = QLabel(wordWrap=True)
        self.summary.setAccessibleName("Model summary")
        self.status = QLabel(wordWrap=True)
        self.progress = QProgressBar()
        self.progress.setRange(0, 0)  # indeterminate: loading has no reliable fraction
        self.progress.hide()
        form = QFormLayout(self)
        form.addRow("Model", self.picker)
        form.addRow("", self.add_folder)
        form.addRow("Device", self.device)
        form.addRow("Runtime", self.runtime)
        if self.gpu_reason:
            no_gpu = QLabel("<small>No usable graphics card here: the model runs on the processor.</small>",
                            wordWrap=True)
            no_gpu.setToolTip(f"GPU unavailable: {self.gpu_reason}")
            form.addRow(no_gpu)
        form.addRow(self.summary)
        form.addRow(self.progress)
        form.addRow(self.status)
        self.bundles: list[BundleInfo] = []
        self.defaults: Defaults = {}  # task → bundle names (defaults.json of the bundles' folders)
        self.picker.activated.connect(self._on_pick)
        self.device.activated.connect(lambda _: self.device_chosen.emit(self.device_name()))
        self.runtime.activated.connect(lambda _: self.runtime_chosen.emit(self.runtime_name()))

    def runtime_name(self) -> str:
        return str(self.runtime.currentData())

    def set_runtime(self, name: str) -> None:
        index = self.runtime.findData(name)
        if index >= 0:
            self.runtime.setCurrentIndex(index)

    def device_name(self) -> str:
        return str(self.device.currentData())

    def set_device(self, name: str) -> None:
        index = self.device.findData(name)
        if index >= 0 and self.device.model().item(index).isEnabled():  # type: ignore[attr-defined]
            self.device.setCurrentIndex(index)

    def set_bundles(self, bundles: list[BundleInfo], preferred: str = "") -> BundleInfo | None:
        """Fill the picker (without checkpoints: `set_checkpoints` adds them); return the bundle to load first
        (preferred path, else Continue's model, else the first usable)."""
        self.bundles = bundles
        self.defaults = read_defaults(list(dict.fromkeys(Path(b.path).parent for b in bundles)))
        self.picker.clear()
        for info in bundles:
            label = info.name if not info.error else f"{info.name} (unusable)"
            self.picker.addItem(label, str(info.path))
            self.picker.setItemData(self.picker.count() - 1, info.error or info.summary, 3)  # 3 = ToolTipRole
        usable = [b for b in bundles if not b.error]
        if not bundles:
            self.summary.setText("")
            self.set_status("No model found. Add one with “Add model from folder…” (a Variorum model or a "
                            "pretrained checkpoint), or put a model folder in your models folder and restart.",
                            error=True)
            return None
        first = self.bundle_for_mode("continue") or (usable[0] if usable else None)
        choice = next((b for b in usable if str(b.path) == preferred), first)
        if choice is None:
            self.set_status("No usable model: " + "; ".join(f"{b.name}: {b.error}" for b in bundles), error=True)
            return None
        self.select(choice)
        return choice

    def set_checkpoints(self, checkpoints: list[CheckpointInfo]) -> None:
        """List `checkpoints` after the bundles (replacing those listed before), each marked as one to import."""
        while self.picker.count() > len(self.bundles):
            self.picker.removeItem(len(self.bundles))
        if checkpoints and self.bundles:
            self.picker.insertSeparator(len(self.bundles))
        for info in checkpoints:
            self.picker.addItem(f"{info.name} — pretrained checkpoint, click to import")
            self.picker.setItemData(self.picker.count() - 1, info.source, CHECKPOINT_ROLE)
            self.picker.setItemData(self.picker.count() - 1, info.summary, Qt.ItemDataRole.ToolTipRole)
        if checkpoints and not self.bundles:
            self.set_status("No Variorum model yet: pick a pretrained checkpoint in the list to import it.")

    def select_path(self, path: str) -> None:
        """Show the bundle at `path` as the picked one again (after an import failed); nothing if not listed."""
        info = next((b for b in self.bundles if str(b.path) == path), None)
        if info is not None:
            self.select(info)

    def installed_tasks(self) -> set[str]:
        """Every task some usable bundle does."""
        return {task for b in self.bundles if not b.error for task in b.tasks}

    def bundle_for_mode(self, mode: str) -> BundleInfo | None:
        """The bundle `mode` starts with; None when no usable bundle does it."""
        return choose_bundle(self.bundles, mode, self.defaults)

    def select(self, info: BundleInfo) -> None:
        """Show `info` as the picked bundle (the window loads it)."""
        self.picker.setCurrentIndex(self.bundles.index(info))
        self._describe(info)

    def _describe(self, info: BundleInfo) -> None:
        """What the model writes and what kind of model it is, in plain words; its card's summary (technical) in
        the tooltip."""
        kind = PRETRAINED_WORDS if info.pretrained else SMALL_WORDS
        self.summary.setText(" ".join([*(TASK_WORDS.get(task, "") for task in info.tasks), kind]).strip())
        self.summary.setToolTip(info.summary)

    def _on_pick(self, index: int) -> None:
        if index >= len(self.bundles):
            name = self.picker.itemData(index, CHECKPOINT_ROLE)
            if isinstance(name, str):  # not the separator
                self.summary.setText("A pretrained checkpoint on this computer: it is imported as one of your "
                                     "models (a few kilobytes: it reads the checkpoint's own weights), then loaded.")
                self.summary.setToolTip(str(self.picker.itemData(index, Qt.ItemDataRole.ToolTipRole)))
                self.checkpoint_chosen.emit(name)
            return
        info = self.bundles[index]
        self._describe(info)
        if info.error:
            self.set_status(f"{info.name} cannot be used: {info.error}", error=True)
            return
        self.bundle_chosen.emit(Path(info.path))

    def set_busy(self, busy: bool, status: str = "") -> None:
        """Loading or importing a model: show progress and keep the writer from starting another meanwhile."""
        self.progress.setVisible(busy)
        for widget in (self.picker, self.add_folder, self.device, self.runtime):
            widget.setEnabled(not busy)
        if busy:
            self.set_status(status)

    def set_status(self, text: str, error: bool = False) -> None:
        self.status.setText(text)
        self.status.setStyleSheet(f"color: {error_text_colour()};" if error else "")
