"""requirements/lock.txt (made by `.ci/lock`, docs/dependencies.md) pins every package pyproject.toml asks
for, at a version its range allows, and no package that pyproject.toml no longer asks for; `.ci/setup-venv`
installs through it (stamp included) and `.ci/choose-torch` takes torch's version from it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
LOCK_PATH = "requirements/lock.txt"
REFRESH = ".ci/lock"
# the lock's target (.ci/lock resolves for it): requirements whose markers exclude it are not locked
TARGET = {"python_version": "3.11", "python_full_version": "3.11.0", "sys_platform": "linux",
          "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix",
          "implementation_name": "cpython", "platform_python_implementation": "CPython"}


def normalize(name: str) -> str:
    """PEP 503: `PySide6_Essentials`, `pyside6.essentials` and `pyside6-essentials` are one package."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass
class Lock:
    pins: dict[str, str] = field(default_factory=dict)  # normalised name → pinned version
    direct: set[str] = field(default_factory=set)  # pinned because pyproject.toml asks for them


def parse_lock(text: str, project: str) -> Lock:
    """uv's requirements format: `name==version`, then `# via …` lines naming who asks for it; the project's
    own requirements read `variorum (pyproject.toml)`."""
    lock = Lock()
    current = None
    for line in text.splitlines():
        if pin := re.match(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;#]+)", line):
            current = normalize(pin[1])
            lock.pins[current] = pin[2]
        elif current and line.startswith(" ") and f"{project} (pyproject.toml)" in line:
            lock.direct.add(current)
    return lock


def declared(pyproject: dict[str, Any]) -> dict[str, list[tuple[str, str]]]:
    """Normalised name → (where, requirement as written) for each runtime dependency and extra that applies
    to the target."""
    project = pyproject["project"]
    groups = [("[project] dependencies", project.get("dependencies", []))]
    groups += [(f"extra '{name}'", reqs) for name, reqs in project.get("optional-dependencies", {}).items()]
    found: dict[str, list[tuple[str, str]]] = {}
    for where, texts in groups:
        for text in texts:
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({**TARGET, "extra": ""}):
                found.setdefault(normalize(req.name), []).append((where, text))
    return found


def lock_problems(pyproject: dict[str, Any], lock_text: str) -> list[str]:
    """Each way pyproject.toml and the lock disagree, one sentence each that names the package, the file
    it is missing from and the command that fixes it."""
    fix = f"run `{REFRESH}` and commit {LOCK_PATH}"
    lock = parse_lock(lock_text, pyproject["project"]["name"])
    wanted = declared(pyproject)
    problems = []
    for name, uses in sorted(wanted.items()):
        where = ", ".join(sorted({w for w, _ in uses}))
        if name not in lock.pins:
            problems.append(f"{name} is in pyproject.toml ({where}) but missing from {LOCK_PATH}: {fix}")
            continue
        if name not in lock.direct:
            problems.append(f"{name} is in pyproject.toml ({where}) but {LOCK_PATH} pins it only as another "
                            f"package's dependency (it predates the change): {fix}")
        for _, text in uses:
            if not Requirement(text).specifier.contains(Version(lock.pins[name]), prereleases=True):
                problems.append(f"pyproject.toml asks for {text} but {LOCK_PATH} pins {name}=={lock.pins[name]}: "
                                f"{fix}")
    for name in sorted(lock.direct - wanted.keys()):
        problems.append(f"{name} is pinned in {LOCK_PATH} for pyproject.toml but missing from pyproject.toml "
                        f"(removed there): {fix}")
    for text in pyproject.get("build-system", {}).get("requires", []):
        req = Requirement(text)
        pin = lock.pins.get(normalize(req.name))
        if pin is None or not req.specifier.contains(Version(pin), prereleases=True):
            problems.append(f"pyproject.toml's [build-system] requires {text} but {LOCK_PATH} pins "
                            f"{f'{req.name}=={pin}' if pin else 'no ' + req.name}: {fix}")
    return problems


def real_pyproject() -> dict[str, Any]:
    with (ROOT / "pyproject.toml").open("rb") as f:
        return tomllib.load(f)


def real_lock() -> str:
    return (ROOT / LOCK_PATH).read_text()


def new_problems(pyproject: dict[str, Any], lock_text: str) -> list[str]:
    """The problems a change brings beyond those of the committed files (which the first test reports)."""
    known = set(lock_problems(real_pyproject(), real_lock()))
    return [p for p in lock_problems(pyproject, lock_text) if p not in known]


def with_dependency(pyproject: dict[str, Any], requirement: str, extra: str | None = None) -> dict[str, Any]:
    project = dict(pyproject["project"])
    if extra is None:
        project["dependencies"] = [*project["dependencies"], requirement]
    else:
        project["optional-dependencies"] = {**project["optional-dependencies"],
                                            extra: [*project["optional-dependencies"][extra], requirement]}
    return {**pyproject, "project": project}


def without_pin(lock_text: str, names: Iterable[str]) -> str:
    """The lock with these packages' entries (pin line and its `# via` lines) removed."""
    out, skipping = [], False
    for line in lock_text.splitlines():
        if pin := re.match(r"([A-Za-z0-9][A-Za-z0-9._-]*)==", line):
            skipping = normalize(pin[1]) in set(names)
        elif not line.startswith(" "):
            skipping = False
        if not skipping:
            out.append(line)
    return "\n".join(out) + "\n"


def test_pyproject_and_the_lock_agree() -> None:
    problems = lock_problems(real_pyproject(), real_lock())
    assert not problems, "\n".join(problems)


def test_the_lock_says_how_to_refresh_it_and_pins_torch_for_both_builds() -> None:
    lock = parse_lock(real_lock(), "variorum")
    assert f"#    {REFRESH}" in real_lock()  # uv's header names the command that made the file
    assert "torch" in lock.pins and "+" not in lock.pins["torch"]  # 2.13.0 matches 2.13.0+cpu and the CUDA build
    # resolved with PyPI's Linux torch wheel, so the CUDA build's libraries are pinned as well
    assert any(name.startswith("nvidia-") for name in lock.pins), "no nvidia-* pins: the CUDA build would float"


def test_a_package_added_to_pyproject_only_is_named_with_the_fix() -> None:
    problems = new_problems(with_dependency(real_pyproject(), "word_freq>=3.1,<4"), real_lock())
    assert problems == [f"word-freq is in pyproject.toml ([project] dependencies) but missing from {LOCK_PATH}: "
                        f"run `{REFRESH}` and commit {LOCK_PATH}"]


def test_a_package_added_to_an_extra_only_names_the_extra() -> None:
    problems = new_problems(with_dependency(real_pyproject(), "english-words>=2", extra="pos"), real_lock())
    assert len(problems) == 1 and "english-words" in problems[0] and "extra 'pos'" in problems[0]


def test_a_package_left_in_the_lock_only_is_named_with_the_fix() -> None:
    pyproject = real_pyproject()
    project = {**pyproject["project"], "dependencies": [d for d in pyproject["project"]["dependencies"]
                                                       if not d.startswith("rich")]}
    problems = new_problems({**pyproject, "project": project}, real_lock())
    assert problems == [f"rich is pinned in {LOCK_PATH} for pyproject.toml but missing from pyproject.toml "
                        f"(removed there): run `{REFRESH}` and commit {LOCK_PATH}"]


def test_names_are_compared_normalised() -> None:
    # pyproject spells it PySide6-Essentials, the lock pyside6-essentials: the same package, no problem
    pyproject = real_pyproject()
    assert any(d.startswith("PySide6-Essentials") for d in pyproject["project"]["dependencies"])
    spelled = real_lock().replace("pyside6-essentials==", "PySide6_Essentials==")
    assert new_problems(pyproject, spelled) == []
    assert normalize("PySide6_Essentials") == normalize("pyside6.essentials") == "pyside6-essentials"


def test_a_pin_outside_the_range_and_a_missing_pin_are_caught() -> None:
    lock = real_lock()
    old = re.sub(r"^transformers==\S+", "transformers==4.44.0", lock, flags=re.MULTILINE)
    assert any("transformers>=4.45,<6" in p and "4.44.0" in p for p in new_problems(real_pyproject(), old))
    problems = new_problems(real_pyproject(), without_pin(lock, ["pytest-qt", "setuptools"]))
    assert any(p.startswith("pytest-qt is in pyproject.toml (extra 'dev') but missing") for p in problems)
    assert any("[build-system] requires setuptools" in p for p in problems)


def test_a_marker_for_another_platform_needs_no_pin() -> None:
    pyproject = with_dependency(real_pyproject(), "pywin32>=300; sys_platform == 'win32'")
    assert new_problems(pyproject, real_lock()) == []


# .ci/setup-venv, run on a copy of the repository's setup files with a stand-in .venv/bin/python that
# records each `python -m pip` call instead of installing (every other call runs this interpreter): `setup_copy`,
# tests/tooling/conftest.py

def setup_venv(root: Path) -> list[str]:
    (root / "pip-calls").unlink(missing_ok=True)
    result = subprocess.run([str(root / ".ci" / "setup-venv"), "dev"], capture_output=True, text=True,
                            timeout=120, check=False, env={**os.environ, "VARIORUM_TORCH_VERSION": ""})
    assert result.returncode == 0, result.stdout + result.stderr
    calls = root / "pip-calls"
    return calls.read_text().splitlines() if calls.exists() else []


@pytest.mark.skipif(sys.platform != "linux", reason="the stand-in interpreter is a shell script")
def test_setup_venv_installs_through_the_lock_and_reinstalls_when_it_changes(setup_copy: Path) -> None:
    installs = [c for c in setup_venv(setup_copy) if c.startswith("-m pip install")]
    assert installs and all(f"--constraint {LOCK_PATH}" in c for c in installs), installs
    assert any("--no-build-isolation -e .[dev]" in c for c in installs)
    assert setup_venv(setup_copy) == []  # unchanged: skipped
    lock = setup_copy / LOCK_PATH
    lock.write_text(lock.read_text() + "# refreshed\n")
    assert any("-e .[dev]" in c for c in setup_venv(setup_copy))  # the lock changed: installs again


@pytest.mark.skipif(sys.platform != "linux", reason="the stand-in interpreter is a shell script")
def test_setup_venv_takes_torch_from_choose_torch_at_the_locked_version(setup_copy: Path) -> None:
    lock = setup_copy / LOCK_PATH
    lock.write_text(re.sub(r"^torch==\S+", "torch==2.4.1", lock.read_text(), flags=re.MULTILINE))
    torch_installs = [c for c in setup_venv(setup_copy) if " torch=" in f" {c}" and "--dry-run" not in c]
    # the one torch install is choose-torch's pick (a build, never a bare PyPI torch), alone and constrained
    assert len(torch_installs) == 1, torch_installs
    assert re.search(r"--no-deps torch===?2\.4\.1(\+cpu)?( |$)", torch_installs[0]), torch_installs


def test_check_latest_floats_everything_but_the_torch_build() -> None:
    script = (ROOT / ".ci" / "check-latest").read_text()
    assert '.ci/choose-torch "$venv/bin/python"' in script  # torch's build chosen as setup-venv does
    eager = next(line for line in script.splitlines() if "--upgrade-strategy eager" in line and "pip" in line)
    assert '--constraint "$torch_held"' in eager and "requirements/lock.txt" not in eager
    assert ".ci/check-latest" not in (ROOT / ".ci" / "run").read_text()  # non-blocking: CI stays on the lock
