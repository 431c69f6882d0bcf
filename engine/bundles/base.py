"""Bundles built on a base: they store only what changed, and name the base.

A bundle made from a writer's checkpoint (`variorum import`, or a fine-tune of such a bundle) has a
`base` section in its config.json: the checkpoint's folder, its architecture and the sha256 of each
of its weights files and of the config and tokenizer files the import reads (`BaseReference`). A
partial fine-tune (`--trainable` head / last-N / lora) of an ordinary bundle is written on that bundle
(`BundleBase`: its folder, name and the sha256 of its `model.safetensors`; looked for first beside the
new bundle, under its own name, so a model shipped with its base in resources/models finds it wherever
the folder goes). Its `model.safetensors` holds only

- the tensors that differ from the base model (a new head, fine-tuned blocks), stored in full;
- low-rank updates (LoRA): a weight W gets W + U V, with U [rows, r] and V [r, cols] in W's own
  layout, stored as `low_rank.up.<name>` and `low_rank.down.<name>`;
- row updates: a tensor of which at most half the rows differ (the rows of tokens a fine-tune added to
  a pretrained vocabulary, engine/training/trainable.py) stores those rows, `rows.index.<name>` [k] and
  `rows.values.<name>` [k, …], not the whole table.

Loading rebuilds the base model with `from_checkpoint` of the family that imports the checkpoint's
architecture (the import: the checkpoint's weights under the renumbered vocabulary; the same files
always give the same tensors; a model of another family built on it names those tensors alike, as
PermGen's decoder-only layout names a language model's), or loads the base bundle (of any kind),
applies the low-rank and row updates, then the stored tensors. Before that it checks the base:
the folder must still be there and every file recorded must have its sha256 (the config and tokenizer
before they are parsed), or one `BundleError` says which file is missing, not a regular file or
changed, and that importing the checkpoint again (or putting the files back) fixes it.

Writing is the reverse (`stored_tensors`): the base with the updates applied is compared tensor by
tensor with the model, and what is not bit-identical is stored (its differing rows, where few differ).
A bundle whose every tensor changed (a fine-tune of all weights) stores them all and needs its base no
longer; it keeps the section as provenance but loading does not read the checkpoint.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from engine.base_model import BASE_FOLDER, user_data_dir
from engine.bundled_model import BundleError
from engine.checkpoints.inspect import CheckpointError, CheckpointInfo, inspect_checkpoint
from engine.data.corpus import file_sha256
from engine.families import family_for_architecture, model_family
from engine.files.small_reads import file_problem

UP, DOWN = "low_rank.up.", "low_rank.down."
ROW_INDEX, ROW_VALUES = "rows.index.", "rows.values."
LowRank = dict[str, tuple[torch.Tensor, torch.Tensor]]  # weight name → (U [rows, r], V [r, cols])
RowUpdates = dict[str, tuple[torch.Tensor, torch.Tensor]]  # tensor name → (row ids [k], those rows [k, …])


@dataclass(frozen=True)
class BaseReference:
    """The checkpoint a bundle is built on: its folder, name, architecture, and the sha256 of its weights and of
    the other files its import reads (config.json, the tokenizer; absent in bundles made before they were kept)."""

    checkpoint: str
    name: str
    architecture: str
    weights_sha256: dict[str, str]
    files_sha256: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, info: CheckpointInfo) -> BaseReference:
        """The reference to `info`, hashing each file once (hundreds of MB of weights for GPT-2)."""
        hashes = {path.name: file_sha256(path) for path in info.weights}
        files = {path.name: file_sha256(path) for path in info.read_files}
        return cls(str(info.path), info.name, info.architecture, hashes, files)

    @classmethod
    def from_config(cls, directory: Path, config: Mapping[str, Any]) -> BaseReference | None:
        """The `base` section of a bundle's config.json, checked; None when there is none."""
        section = config.get("base")
        if section is None:
            return None
        fields = ("checkpoint", "name", "architecture")
        hashes = section.get("weights_sha256") if isinstance(section, dict) else None
        files = section.get("files_sha256", {}) if isinstance(section, dict) else None
        if (not isinstance(section, dict) or not all(isinstance(section.get(f), str) for f in fields)
                or not all(isinstance(h, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in h.items())
                           for h in (hashes, files))):
            raise BundleError(f"bundle {directory}: 'base' in config.json must name the checkpoint, its name, "
                              "architecture and weights_sha256")
        assert isinstance(hashes, dict) and isinstance(files, dict)  # checked just above
        return cls(section["checkpoint"], section["name"], section["architecture"], dict(hashes), dict(files))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def located(self) -> Path | None:
        """The checkpoint: where it was when the bundle was made, else, for a single file (a .gguf), the file of
        that name where `variorum get-base` keeps the pretrained base, so a bundle built on the base on one
        computer finds it on another; None when neither is there (its hashes are checked on loading)."""
        recorded = Path(self.checkpoint)
        if recorded.exists():
            return recorded
        stored = user_data_dir() / BASE_FOLDER / recorded.name
        return stored if recorded.suffix == ".gguf" and stored.is_file() else None

    def missing(self) -> str:
        """Why the bundle cannot load for want of its checkpoint (checked without hashing), or ""."""
        if self.located() is not None:
            return ""
        if Path(self.checkpoint).suffix == ".gguf":
            return (f"needs the pretrained base {self.name}, which is not on this computer: `variorum get-base` "
                    "installs it")
        return f"its checkpoint {self.name} is no longer at {self.checkpoint}: import it again, or put it back"

    def checked_info(self, directory: Path) -> CheckpointInfo:
        """The checkpoint, after checking that every file its import reads is the one the bundle was made from:
        the config and tokenizer before they are parsed, the weights before they are loaded."""
        redo = f"import {self.name} again, or put its files back"
        location = self.located() or Path(self.checkpoint)
        if location.is_dir():
            self._check_hashes(directory, {name: location / name for name in self.files_sha256}, self.files_sha256)
        try:
            info = inspect_checkpoint(location, self.name)
        except CheckpointError as error:
            raise BundleError(f"bundle {directory} is built on the checkpoint {self.name} at {self.checkpoint}, "
                              f"which cannot be read now ({error}); {redo}") from None
        self._check_hashes(directory, {path.name: path for path in info.weights}, self.weights_sha256)
        return info

    def _check_hashes(self, directory: Path, found: Mapping[str, Path], hashes: Mapping[str, str]) -> None:
        redo = f"import {self.name} again, or put its files back"
        for file, digest in hashes.items():
            problem = file_problem(found[file]) if file in found else "does not exist"
            if problem:
                raise BundleError(f"bundle {directory}: {file} of its base checkpoint {self.checkpoint} {problem} "
                                  f"now; {redo}")
            if file_sha256(found[file]) != digest:
                raise BundleError(f"bundle {directory}: {file} of its base checkpoint {self.checkpoint} has changed "
                                  f"since the bundle was made (sha256 differs); {redo}")

    def state(self, directory: Path, kind: str) -> dict[str, torch.Tensor]:
        """The base model's tensors (checked checkpoint → the import of the family of its architecture, else of
        `kind`'s family), by our parameter names."""
        family = family_for_architecture(self.architecture) or model_family(kind)
        model, _ = family.from_checkpoint(self.checked_info(directory))
        return model.state_dict()


@dataclass(frozen=True)
class BundleBase:
    """The bundle a bundle is built on: its folder when written, its name and its weights' sha256."""

    bundle: str
    name: str
    sha256: str

    @classmethod
    def of(cls, directory: Path) -> BundleBase:
        from engine.bundles.bundle import WEIGHTS_FILE

        directory = Path(directory).resolve()
        return cls(str(directory), directory.name, file_sha256(directory / WEIGHTS_FILE))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def located(self, directory: Path) -> Path:
        """The base's folder: a sibling of `directory` under the base's name, else where it was when written;
        `BundleError` when neither holds weights with the recorded sha256."""
        from engine.bundles.bundle import WEIGHTS_FILE

        for candidate in (Path(directory).resolve().parent / self.name, Path(self.bundle)):
            if (candidate / WEIGHTS_FILE).is_file() and file_sha256(candidate / WEIGHTS_FILE) == self.sha256:
                return candidate
        raise BundleError(f"bundle {directory} is built on the bundle {self.name}, and neither a folder of that "
                          f"name beside it nor {self.bundle} holds its weights (sha256 {self.sha256[:16]}…); put "
                          "that bundle back beside it")

    def state(self, directory: Path, kind: str) -> dict[str, torch.Tensor]:
        from engine.bundles.bundle import load_model_bundle

        return load_model_bundle(self.located(directory), "cpu").model.state_dict()  # any kind: the names count


Base = BaseReference | BundleBase


def read_base(directory: Path, config: Mapping[str, Any]) -> Base | None:
    """The base a bundle's config.json names (a checkpoint or a bundle), checked; None when it names none."""
    section = config.get("base")
    if isinstance(section, dict) and "bundle" in section:
        if not all(isinstance(section.get(f), str) for f in ("bundle", "name", "sha256")):
            raise BundleError(f"bundle {directory}: a 'base' bundle in config.json must give its folder, name "
                              "and sha256")
        return BundleBase(section["bundle"], section["name"], section["sha256"])
    return BaseReference.from_config(directory, config)


def _pairs(stored: Mapping[str, torch.Tensor], first: str, second: str,
           what: str) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """The tensors stored under `first` + name and `second` + name, paired by name (`BundleError` for a half pair)."""
    ones = {k[len(first):]: v for k, v in stored.items() if k.startswith(first)}
    twos = {k[len(second):]: v for k, v in stored.items() if k.startswith(second)}
    if set(ones) != set(twos):
        raise BundleError(f"{what} without their other half: {sorted(set(ones) ^ set(twos))[:3]}")
    return {name: (ones[name], twos[name]) for name in ones}


def split_updates(stored: Mapping[str, torch.Tensor]) -> tuple[dict[str, torch.Tensor], LowRank, RowUpdates]:
    """A weights file's dense tensors, its low-rank updates and its row updates (`BundleError` for a half pair)."""
    dense = {k: v for k, v in stored.items() if not k.startswith((UP, DOWN, ROW_INDEX, ROW_VALUES))}
    return (dense, _pairs(stored, UP, DOWN, "low-rank updates"),
            _pairs(stored, ROW_INDEX, ROW_VALUES, "row updates"))


def apply_row_updates(state: dict[str, torch.Tensor], updates: RowUpdates) -> dict[str, torch.Tensor]:
    """`state` with the stored rows of each row update in place of the base's (a new dict and new tensors)."""
    result = dict(state)
    for name, (index, rows) in updates.items():
        tensor = state.get(name)
        if tensor is None or index.dim() != 1 or index.dtype != torch.long or rows.shape != (len(index),
                                                                                              *tensor.shape[1:]) \
                or (len(index) and not 0 <= int(index.min()) <= int(index.max()) < len(tensor)):
            raise BundleError(f"row update of {name} does not fit the tensor it updates")
        result[name] = tensor.clone()
        result[name][index] = rows.to(tensor.dtype)
    return result


def apply_low_rank(state: dict[str, torch.Tensor], updates: LowRank) -> dict[str, torch.Tensor]:
    """`state` with W + U V for each update (a new dict; `state`'s tensors are not modified)."""
    result = dict(state)
    for name, (up, down) in updates.items():
        weight = state.get(name)
        if weight is None or up.dim() != 2 or down.dim() != 2 or (up.shape[0], down.shape[1]) != weight.shape \
                or up.shape[1] != down.shape[0]:
            raise BundleError(f"low-rank update of {name} does not fit the weight it updates")
        result[name] = weight + (up.float() @ down.float()).to(weight.dtype)  # [rows, r] @ [r, cols]
    return result


def unique_tensors(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The model's state, each shared (tied) tensor once under its first name, as `save_model` stores it."""
    seen: set[int] = set()
    unique = {}
    for name, tensor in model.state_dict().items():
        if tensor.data_ptr() in seen and tensor.numel():
            continue
        seen.add(tensor.data_ptr())
        unique[name] = tensor
    return unique


def stored_tensors(model: torch.nn.Module, base_state: Mapping[str, torch.Tensor],
                   updates: LowRank | None = None) -> dict[str, torch.Tensor]:
    """What a bundle on `base_state` stores for `model`: the low-rank `updates` and every tensor that
    differs from the base with those updates applied."""
    # On the CPU, where the base was read and whence the file is written, for a model trained on a GPU too.
    updates = {name: (up.cpu(), down.cpu()) for name, (up, down) in (updates or {}).items()}
    updated = apply_low_rank(dict(base_state), updates)
    stored: dict[str, torch.Tensor] = {}
    for name, on_device in unique_tensors(model).items():
        tensor, base = on_device.cpu(), updated.get(name)
        if base is not None and base.shape == tensor.shape and torch.equal(base, tensor):
            continue
        rows = _changed_rows(base, tensor)
        if rows is None:
            stored[name] = tensor.contiguous()
        else:
            stored[ROW_INDEX + name], stored[ROW_VALUES + name] = rows, tensor[rows].contiguous()
    for name, (up, down) in updates.items():
        stored[UP + name], stored[DOWN + name] = up.contiguous(), down.contiguous()
    return stored


def _changed_rows(base: torch.Tensor | None, tensor: torch.Tensor) -> torch.Tensor | None:
    """The ids [k] of the rows of `tensor` that differ from `base`, when it is a table of the same shape with at
    most half its rows changed; None when it is to be stored whole."""
    if base is None or base.shape != tensor.shape or tensor.dim() < 2:
        return None
    rows = (base != tensor).flatten(1).any(dim=1).nonzero()[:, 0]  # [k]
    return rows if 2 * len(rows) <= len(tensor) else None


def with_base(directory: Path, stored: dict[str, torch.Tensor], reference: torch.nn.Module,
             config: Mapping[str, Any]) -> dict[str, torch.Tensor]:
    """The whole state of a bundle that stores changes to a base (its `config`), its `reference` model built on the
    meta device; `stored` itself for a bundle without a base."""
    base = read_base(directory, config)
    if base is None:
        return stored
    try:
        dense, updates, rows = split_updates(stored)
    except BundleError as error:
        raise BundleError(f"bundle {directory}: {error}") from None
    expected = reference.state_dict()
    if not updates and not rows and set(expected) <= set(dense) | tied_names(reference, dense):
        return dense  # every tensor is stored: the base is provenance only
    aliases = _aliases(reference)  # a tied weight comes from its first name, which an update may have changed
    base_state = {k: v for k, v in base.state(directory, str(config["kind"])).items()
                  if k in expected and k not in aliases}
    try:
        return {**apply_row_updates(apply_low_rank(base_state, updates), rows), **dense}
    except BundleError as error:
        raise BundleError(f"bundle {directory}: {error}") from None


def _aliases(reference: torch.nn.Module) -> set[str]:
    """The names of `reference`'s tied parameters other than the first of each (a tied softmax's output layer)."""
    return set(dict(reference.named_parameters(remove_duplicate=False))) - set(dict(reference.named_parameters()))


def tied_names(reference: torch.nn.Module, state: dict[str, torch.Tensor]) -> set[str]:
    """Names of `reference`'s parameters tied to one that `state` holds (saved once, under one name)."""
    params = dict(reference.named_parameters(remove_duplicate=False))
    return {k for k in params if any(params[k] is params[o] for o in state if o in params)}
