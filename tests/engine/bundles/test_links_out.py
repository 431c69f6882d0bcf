"""A bundle whose files are links out of its folder is refused in one line before anything is read."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from engine.bundles.bundle import BundleError, load_bundle


@pytest.mark.parametrize("name", ["config.json", "model.safetensors", "tokenizer.json", "card.md"])
def test_a_file_linked_from_outside_the_bundle_is_refused(tiny_bundle: Path, tmp_path: Path, name: str) -> None:
    bundle = Path(shutil.copytree(tiny_bundle, tmp_path / "copy"))
    elsewhere = tmp_path / "elsewhere" / name
    elsewhere.parent.mkdir()
    shutil.move(bundle / name, elsewhere)
    (bundle / name).symlink_to(elsewhere)
    with pytest.raises(BundleError, match=f"{name} is a link to {elsewhere}, outside the bundle folder"):
        load_bundle(bundle)


def test_links_inside_the_bundle_and_a_linked_bundle_folder_load(tiny_bundle: Path, tmp_path: Path) -> None:
    bundle = Path(shutil.copytree(tiny_bundle, tmp_path / "copy"))
    shutil.move(bundle / "card.md", bundle / "card-original.md")
    (bundle / "card.md").symlink_to("card-original.md")
    (tmp_path / "linked").symlink_to(bundle)
    assert load_bundle(tmp_path / "linked").model is not None
