"""The interface packages the bootstrap generates from tools/ (where no ROS 2 distribution provides
them) against the released ones: every type's RIHS01 hash, as the installed package's
share/<package>/msg/<Type>.json holds it, equals the released definition's, so that clients built
against the released packages match these topics. Where ROS 2 is installed the distribution's own
package is checked the same way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.required import absent, required

REPO = Path(__file__).resolve().parents[2]
RELEASED = {name: digest for name, digest in (
    line.split() for line in (REPO / "test" / "support" / "released_type_hashes.txt").read_text().splitlines()
    if line.strip() and not line.startswith("#"))}


def _installed_json(name: str) -> Path | None:
    ament_index = required("ament_index_python.packages",
                           "ament_index_python is not installed (part of every ROS 2)")
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
        absent(f"{name.split('/')[0]} is not installed here (ds_dbw_msgs is not released for Kilted: "
               "the bootstrap generates it for the self-installed environments)")
    hashes = json.loads(path.read_text())["type_hashes"]
    assert hashes[0]["type_name"] == name
    assert hashes[0]["hash_string"] == RELEASED[name]


def test_the_ds_dbw_msgs_constants_the_driver_copies_are_the_packages():
    """acres_sim.drive keeps ds_dbw_msgs' numbers itself (it imports no ROS): held here to the
    package's own constants, where it imports."""
    dbw = required("ds_dbw_msgs.msg", "ds_dbw_msgs is not installed (released for Humble and Jazzy only)")
    from acres_sim.drive import driver

    def constants(cls: type, prefix: str) -> dict[int, set[str]]:
        found: dict[int, set[str]] = {}
        for name in dir(cls):
            if name.startswith(prefix) and isinstance(getattr(cls, name), int):
                found.setdefault(getattr(cls, name), set()).add(name)
        return found

    for names, cls, prefix in ((driver.STEER_CMD_NAMES, dbw.SteeringCmd, "CMD_"),
                               (driver.THROTTLE_CMD_NAMES, dbw.ThrottleCmd, "CMD_"),
                               (driver.BRAKE_CMD_NAMES, dbw.BrakeCmd, "CMD_"),
                               (driver.GEAR_NAMES, dbw.Gear, "")):
        released = constants(cls, prefix) if prefix else {
            value: {name} for name, value in ((n, getattr(cls, n)) for n in dir(cls) if n.isupper())
            if isinstance(value, int)}
        assert set(names) == set(released), (cls.__name__, names, released)
        for value, name in names.items():
            assert name in released[value], (cls.__name__, value, name, released[value])
    S, P, G = dbw.SteeringCmd, dbw.ThrottleCmd, dbw.Gear
    d = driver
    assert (d.STEER_CMD_NONE, d.STEER_CMD_TORQUE, d.STEER_CMD_ANGLE, d.STEER_CMD_CURVATURE,
            d.STEER_CMD_YAW_RATE, d.STEER_CMD_SET_OFFSET, d.STEER_CMD_PERCENT, d.STEER_CMD_CALIBRATE) == (
        S.CMD_NONE, S.CMD_TORQUE, S.CMD_ANGLE, S.CMD_CURVATURE, S.CMD_YAW_RATE, S.CMD_SET_OFFSET,
        S.CMD_PERCENT, S.CMD_CALIBRATE)
    assert (d.PEDAL_CMD_NONE, d.PEDAL_CMD_PERCENT) == (P.CMD_NONE, P.CMD_PERCENT)
    assert (dbw.BrakeCmd.CMD_NONE, dbw.BrakeCmd.CMD_PERCENT) == (P.CMD_NONE, P.CMD_PERCENT)
    assert (d.GEAR_NONE, d.GEAR_PARK, d.GEAR_REVERSE, d.GEAR_NEUTRAL, d.GEAR_DRIVE) == (
        G.NONE, G.PARK, G.REVERSE, G.NEUTRAL, G.DRIVE)
