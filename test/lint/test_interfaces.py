"""The interface packages the bootstrap generates from tools/ (where no ROS 2 distribution provides
them) against the released ones: every type's RIHS01 hash, as the installed package's
share/<package>/msg/<Type>.json holds it, equals the released definition's, so that clients built
against the released packages match these topics. Where ROS 2 is installed the distribution's own
package is checked the same way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RELEASED = {name: digest for name, digest in (
    line.split() for line in (REPO / "test" / "support" / "released_type_hashes.txt").read_text().splitlines()
    if line.strip() and not line.startswith("#"))}


def _installed_json(name: str) -> Path | None:
    ament_index = pytest.importorskip("ament_index_python.packages",
                                      reason="ament_index_python is not installed (part of every ROS 2)")
    package, kind, type_name = name.split("/")
    try:
        share = Path(ament_index.get_package_share_directory(package))
    except ament_index.PackageNotFoundError:
        return None
    return share / kind / f"{type_name}.json"


def test_every_definition_in_tools_has_a_released_hash_to_match():
    generated = {f"{pkg}/msg/{f.stem}" for pkg in ("ackermann_msgs", "ds_dbw_msgs")
                 for f in (REPO / "tools" / pkg / "msg").rglob("*.msg")}
    assert generated == set(RELEASED)
    assert len(generated) == 17


@pytest.mark.parametrize("name", sorted(RELEASED))
def test_the_installed_type_has_the_released_hash(name):
    path = _installed_json(name)
    if path is None:
        pytest.skip(f"{name.split('/')[0]} is not installed here (ds_dbw_msgs is not released for Kilted: "
                    "the bootstrap generates it for the self-installed environments)")
    hashes = json.loads(path.read_text())["type_hashes"]
    assert hashes[0]["type_name"] == name
    assert hashes[0]["hash_string"] == RELEASED[name]
