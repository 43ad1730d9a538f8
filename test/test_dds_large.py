"""Large clouds and images reach a second process that uses DEFAULT DDS settings.

The bridge applies config/fastdds_large_data.xml to its own process (acres_sim.dds) before
rclpy.init(); a subscriber without any profile then receives every cloud and image at 10 Hz.
ROS_DOMAIN_ID 160..169.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from _bridge_support import fake_game_available, measure_large_delivery

from acres_sim import dds

REPO = Path(__file__).resolve().parent.parent
PROFILE = REPO / "config" / "fastdds_large_data.xml"
NS = {"d": "http://www.eprosima.com"}


def test_profile_xml_is_a_default_participant_with_large_shm_plus_udp():
    root = ET.parse(PROFILE).getroot()
    assert root.tag == "{http://www.eprosima.com}dds"
    descriptors = {d.findtext("d:transport_id", namespaces=NS): d
                   for d in root.iterfind("d:profiles/d:transport_descriptors/d:transport_descriptor", NS)}
    kinds = {tid: d.findtext("d:type", namespaces=NS) for tid, d in descriptors.items()}
    assert sorted(kinds.values()) == ["SHM", "UDPv4"]
    shm = next(d for d in descriptors.values() if d.findtext("d:type", namespaces=NS) == "SHM")
    assert int(shm.findtext("d:segment_size", namespaces=NS)) >= 16 * 1024 * 1024
    participants = root.findall("d:profiles/d:participant", NS)
    assert len(participants) == 1 and participants[0].get("is_default_profile") == "true"
    rtps = participants[0].find("d:rtps", NS)
    assert rtps.findtext("d:useBuiltinTransports", namespaces=NS).strip() == "false"
    used = [t.text for t in rtps.iterfind("d:userTransports/d:transport_id", NS)]
    assert sorted(used) == sorted(descriptors)


def _share(tmp_path: Path, with_file: bool = True):
    if with_file:
        (tmp_path / "config").mkdir()
        (tmp_path / "config" / dds.PROFILE_FILE_NAME).write_text(PROFILE.read_text())
    return lambda: str(tmp_path)


def test_default_applies_the_installed_profile(tmp_path):
    env: dict[str, str] = {}
    choice = dds.apply_profile(env, _share(tmp_path))
    assert choice.applied and env[dds.FASTDDS_VARIABLE] == str(tmp_path / "config" / dds.PROFILE_FILE_NAME)
    assert "16 MB" in choice.message


def test_source_tree_profile_when_not_installed():
    def not_installed() -> str:
        raise LookupError("acres_sim")

    env = {"RMW_IMPLEMENTATION": "rmw_fastrtps_dynamic_cpp"}
    choice = dds.apply_profile(env, not_installed)
    assert choice.applied and Path(env[dds.FASTDDS_VARIABLE]) == PROFILE.resolve()


@pytest.mark.parametrize("variable", [dds.FASTDDS_VARIABLE, dds.LEGACY_VARIABLE])
def test_a_users_profile_is_left_alone(tmp_path, variable):
    env = {variable: "/somewhere/mine.xml"}
    choice = dds.apply_profile(env, _share(tmp_path))
    assert not choice.applied and env == {variable: "/somewhere/mine.xml"}
    assert "/somewhere/mine.xml" in choice.message and variable in choice.message


def test_other_rmw_gets_nothing(tmp_path):
    env = {"RMW_IMPLEMENTATION": "rmw_cyclonedds_cpp"}
    choice = dds.apply_profile(env, _share(tmp_path))
    assert not choice.applied and dds.FASTDDS_VARIABLE not in env and "rmw_cyclonedds_cpp" in choice.message


def test_override_off_and_path(tmp_path):
    env = {dds.OVERRIDE_VARIABLE: "off"}
    assert not dds.apply_profile(env, _share(tmp_path)).applied and dds.FASTDDS_VARIABLE not in env
    mine = tmp_path / "mine.xml"
    mine.write_text(PROFILE.read_text())
    env = {dds.OVERRIDE_VARIABLE: str(mine), dds.FASTDDS_VARIABLE: "/other.xml"}
    choice = dds.apply_profile(env, _share(tmp_path / "x", with_file=False))
    assert choice.applied and env[dds.FASTDDS_VARIABLE] == str(mine.resolve())
    env = {dds.OVERRIDE_VARIABLE: str(tmp_path / "missing.xml")}
    choice = dds.apply_profile(env, _share(tmp_path / "y", with_file=False))
    assert not choice.applied and "not a file" in choice.message


@pytest.mark.skipif(not fake_game_available(), reason="acres_sim.fake_game is not there yet")
def test_default_subscriber_process_receives_every_cloud_and_image():
    pytest.importorskip("rclpy", reason="rclpy is needed")
    result = measure_large_delivery(160, seconds=5.0)
    assert "fastdds_large_data.xml" in result["profile"]
    for kind in ("lidar", "camera"):
        stats = result[kind]
        assert stats["sent"] >= 30, stats  # 10 Hz for ~4 s
        assert stats["missing"] == 0, f"{kind}: {stats}"
