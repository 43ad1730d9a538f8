"""The Fast DDS large-data profile: the right file for this machine's Fast DDS, really in force.

The bridge applies config/fastrtps_large_data.xml (Fast DDS 2.x, Jazzy) or
config/fastdds_large_data.xml (3.x, Kilted) to its own process before rclpy.init(), checks what
its participant mapped, and says so; a subscriber without any profile then receives every cloud
and image. ROS_DOMAIN_ID 160..169.
"""

from __future__ import annotations

import os
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from support.bridge import Process, free_port, measure_large_delivery, ros_env, start_bridge

from acres_sim.middleware import dds

REPO = Path(__file__).resolve().parents[2]
PROFILES = {generation: REPO / "config" / name for generation, (_, name) in dds.GENERATIONS.items()}
NS = {"d": "http://www.eprosima.com"}
# The only elements whose names differ between the generations (Fast DDS 2.x -> 3.x).
RENAMED = {"heartbeatPeriod": "heartbeat_period", "heartbeatResponseDelay": "heartbeat_response_delay"}


def _elements(path: Path) -> list[tuple[str, str]]:
    """Every element of the file as (tag, text), 2.x names spelled as 3.x."""
    out = []
    for element in ET.parse(path).getroot().iter():
        tag = element.tag.split("}", 1)[-1]
        out.append((RENAMED.get(tag, tag), (element.text or "").strip()))
    return out


@pytest.mark.parametrize("generation", sorted(PROFILES))
def test_profile_xml_is_a_default_participant_with_large_shm_plus_udp(generation):
    root = ET.parse(PROFILES[generation]).getroot()
    assert root.tag == "{http://www.eprosima.com}dds"
    descriptors = {d.findtext("d:transport_id", namespaces=NS): d
                   for d in root.iterfind("d:profiles/d:transport_descriptors/d:transport_descriptor", NS)}
    kinds = {tid: d.findtext("d:type", namespaces=NS) for tid, d in descriptors.items()}
    assert sorted(kinds.values()) == ["SHM", "UDPv4"]
    shm = next(d for d in descriptors.values() if d.findtext("d:type", namespaces=NS) == "SHM")
    assert int(shm.findtext("d:segment_size", namespaces=NS)) >= dds.LARGE_SEGMENT_BYTES
    participants = root.findall("d:profiles/d:participant", NS)
    assert len(participants) == 1 and participants[0].get("is_default_profile") == "true"
    rtps = participants[0].find("d:rtps", NS)
    assert rtps.findtext("d:useBuiltinTransports", namespaces=NS).strip() == "false"
    used = [t.text for t in rtps.iterfind("d:userTransports/d:transport_id", NS)]
    assert sorted(used) == sorted(descriptors)
    period = "heartbeatPeriod" if generation == 2 else "heartbeat_period"
    assert root.find(f"d:profiles/d:data_writer/d:times/d:{period}/d:nanosec", NS).text.strip() == "2000000"
    announce = rtps.find("d:builtin/d:discovery_config/d:leaseAnnouncement", NS)
    assert (announce.findtext("d:sec", namespaces=NS), announce.findtext("d:nanosec", namespaces=NS)) == (
        "0", "500000000")


# Where the Fast DDS packages install their profile schema (one per generation)
SCHEMAS = {2: "fastRTPS_profiles.xsd", 3: "fastdds_profiles.xsd"}


@pytest.mark.parametrize("generation", sorted(PROFILES))
def test_profile_xml_is_valid_for_its_fast_dds_generation(generation):
    """Fast DDS rejects a file with one element it does not know, whole and silently: each file
    against its generation's schema, where that Fast DDS is installed."""
    etree = pytest.importorskip("lxml.etree", reason="lxml validates against the schema")
    prefixes = [Path(p) for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p]
    found = [x for prefix in prefixes for x in sorted((prefix / "share").glob(f"**/{SCHEMAS[generation]}"))]
    if not found:
        pytest.skip(f"{SCHEMAS[generation]} is not installed (this distribution's Fast DDS is not "
                    f"{generation}.x)")
    tree = etree.parse(str(found[0]))
    schema = etree.XMLSchema(tree)
    namespace = tree.getroot().get("targetNamespace")  # 2.x's differs; its parser ignores it
    text = PROFILES[generation].read_text().replace('xmlns="http://www.eprosima.com"', f'xmlns="{namespace}"')
    document = etree.fromstring(text.encode())
    assert schema.validate(document), schema.error_log


def test_the_two_generations_files_differ_only_in_the_renamed_elements():
    text2, text3 = (PROFILES[g].read_text() for g in (2, 3))
    assert _elements(PROFILES[2]) == _elements(PROFILES[3])
    assert not any(f"<{new}>" in text2 for new in RENAMED.values())  # 2.x rejects the 3.x names
    assert not any(f"<{old}>" in text3 for old in RENAMED)  # and 3.x the 2.x ones


def _share(tmp_path: Path, generation: int | None = 3, with_files: bool = True):
    """A share directory lookup: acres_sim's config and an rmw_fastrtps_shared_cpp package.xml."""
    (tmp_path / "acres_sim" / "config").mkdir(parents=True)
    if with_files:
        for path in PROFILES.values():
            (tmp_path / "acres_sim" / "config" / path.name).write_text(path.read_text())
    rmw = tmp_path / "rmw_fastrtps_shared_cpp"
    rmw.mkdir()
    depend = {2: "fastrtps", 3: "fastdds", None: "something_else"}[generation]
    (rmw / "package.xml").write_text(f"<package><name>rmw_fastrtps_shared_cpp</name>"
                                     f"<build_depend>{depend}</build_depend></package>")
    return lambda package: str(tmp_path / package)


@pytest.mark.parametrize("generation", [2, 3])
def test_default_applies_the_installed_profile_of_the_generation_through_its_variable(tmp_path, generation):
    env: dict[str, str] = {}
    choice = dds.apply_profile(env, _share(tmp_path, generation))
    variable, name = dds.GENERATIONS[generation]
    assert choice.applied and choice.generation == generation
    assert env == {variable: str(tmp_path / "acres_sim" / "config" / name)}
    assert choice.environment() == env


@pytest.mark.parametrize("users", [{}, {dds.LEGACY_VARIABLE: "/somewhere/mine.xml"}])
def test_a_profile_while_joining_is_gone_for_what_the_process_starts_later(tmp_path, users):
    """The scenario runner's participant takes the profile; the stack it starts later does not."""
    env = {"PATH": "/bin", **users}
    with dds.profile_while_joining(env, _share(tmp_path, 2)) as choice:
        inside = dict(env)
    assert env == {"PATH": "/bin", **users}
    if users:
        assert not choice.applied and inside == env
    else:
        assert choice.applied and inside == {"PATH": "/bin", dds.LEGACY_VARIABLE: choice.path}


def test_generation_read_from_the_rmw_package_and_unknown_without_one(tmp_path):
    assert dds.fast_dds_generation(_share(tmp_path / "a", 2)) == 2
    assert dds.fast_dds_generation(_share(tmp_path / "b", 3)) == 3
    assert dds.fast_dds_generation(_share(tmp_path / "c", None)) is None

    def nothing(package: str) -> str:
        raise LookupError(package)

    assert dds.fast_dds_generation(nothing) is None


def test_this_machines_generation_is_known_and_matches_its_fast_dds_library():
    pytest.importorskip("rclpy", reason="rclpy is needed")
    generation = dds.fast_dds_generation()
    assert generation in (2, 3)
    assert dds.shipped_environment() == {dds.GENERATIONS[generation][0]: str(dds.shipped_profile(generation))}


def test_source_tree_profile_when_not_installed(tmp_path):
    lookup = _share(tmp_path, 2, with_files=False)
    env = {"RMW_IMPLEMENTATION": "rmw_fastrtps_dynamic_cpp"}
    choice = dds.apply_profile(env, lookup)
    assert choice.applied and Path(env[dds.LEGACY_VARIABLE]) == PROFILES[2].resolve()


@pytest.mark.parametrize("variable", [dds.FASTDDS_VARIABLE, dds.LEGACY_VARIABLE])
def test_a_users_profile_is_left_alone(tmp_path, variable):
    env = {variable: "/somewhere/mine.xml"}
    choice = dds.apply_profile(env, _share(tmp_path))
    assert not choice.applied and env == {variable: "/somewhere/mine.xml"}
    assert choice.path == "/somewhere/mine.xml" and choice.variable == variable


def test_other_rmw_gets_nothing_and_is_not_checked(tmp_path):
    env = {"RMW_IMPLEMENTATION": "rmw_cyclonedds_cpp"}
    choice = dds.apply_profile(env, _share(tmp_path))
    assert not choice.applied and env == {"RMW_IMPLEMENTATION": "rmw_cyclonedds_cpp"}
    ok, line = dds.report(choice, dds.InForce(0, None))
    assert ok and "rmw_cyclonedds_cpp" in line


def test_override_off_and_path(tmp_path):
    env = {dds.OVERRIDE_VARIABLE: "off"}
    assert not dds.apply_profile(env, _share(tmp_path / "a")).applied and len(env) == 1
    mine = tmp_path / "mine.xml"
    mine.write_text(PROFILES[2].read_text())
    env = {dds.OVERRIDE_VARIABLE: str(mine), dds.FASTDDS_VARIABLE: "/other.xml"}
    choice = dds.apply_profile(env, _share(tmp_path / "b", 2, with_files=False))
    assert choice.applied and env[dds.LEGACY_VARIABLE] == str(mine.resolve())
    env = {dds.OVERRIDE_VARIABLE: str(tmp_path / "missing.xml")}
    choice = dds.apply_profile(env, _share(tmp_path / "c", with_files=False))
    assert not choice.applied and "not a file" in choice.reason


MAPS = """\
7f0000000000-7f0001001000 rw-s 00000000 00:1a 123 /dev/shm/fastrtps_77f124abf2236636
7f0002000000-7f0002087000 rw-s 00000000 00:1a 124 /dev/shm/fastrtps_8e867c5f15c11599
7f0003000000-7f000300d000 rw-s 00000000 00:1a 125 /dev/shm/fastrtps_port7000
7f0004000000-7f0004400000 r-xp 00000000 08:01 126 /opt/ros/jazzy/lib/libfastrtps.so.2.14.5
7f0005000000-7f0005001000 rw-p 00000000 00:00 0
"""


def test_in_force_is_read_from_the_memory_map():
    in_force = dds.read_in_force(MAPS.splitlines())
    assert in_force.segment_bytes == 0x1001000 and in_force.large_data
    assert in_force.library == "Fast DDS 2.14.5"
    small = dds.read_in_force([line for line in MAPS.splitlines() if "77f124" not in line])
    assert small.segment_bytes == 0x87000 and not small.large_data
    assert dds.read_in_force([]) == dds.InForce(0, None)


def test_report_never_claims_a_profile_that_is_not_in_force(tmp_path):
    shipped = dds.choose_profile({}, _share(tmp_path / "a", 2))
    ok, line = dds.report(shipped, dds.InForce(17 << 20, "Fast DDS 2.14.5"))
    assert ok and line.startswith("DDS profile in force") and "17.0 MB" in line
    ok, line = dds.report(shipped, dds.InForce(540 << 10, "Fast DDS 2.14.5"))
    assert not ok and "NOT in force" in line and "fragmented UDP" in line and "heartbeats" in line
    # a Jazzy user who set the Kilted variable: said why, and which variable and file fix it
    users = dds.choose_profile({dds.FASTDDS_VARIABLE: "/x.xml"}, _share(tmp_path / "b", 2))
    ok, line = dds.report(users, dds.InForce(540 << 10, "Fast DDS 2.14.5"))
    assert not ok and f"does not read {dds.FASTDDS_VARIABLE}" in line
    assert f"{dds.LEGACY_VARIABLE} at acres_sim's config/fastrtps_large_data.xml" in line


def _bridge_profile_line(domain_id: int, env: dict[str, str | None]) -> tuple[str, int]:
    """Start a bridge (no game: it only reconnects), return its DDS profile line and the largest
    shared-memory segment its process mapped, read from outside through /proc/PID/maps."""
    bridge = start_bridge(free_port(), domain_id, env_extra=env)
    try:
        line = bridge.wait_for("DDS profile", 30)
        with open(f"/proc/{bridge.proc.pid}/maps") as maps:
            segment = dds.read_in_force(maps.readlines()).segment_bytes
    finally:
        bridge.stop()
    return line, segment


def _clean_env() -> dict[str, str | None]:
    """The profile variables a developer's shell may hold, removed."""
    return {dds.FASTDDS_VARIABLE: None, dds.LEGACY_VARIABLE: None, dds.OVERRIDE_VARIABLE: None}


def test_bridge_maps_a_16_mb_segment_and_says_so():
    """Fails when this machine's Fast DDS does not apply the shipped file (a renamed element, the
    wrong variable): the segment is then the built-in 512 KB one."""
    pytest.importorskip("rclpy", reason="rclpy is needed")
    line, segment = _bridge_profile_line(161, _clean_env())
    assert segment >= dds.LARGE_SEGMENT_BYTES, line
    assert "DDS profile in force" in line and dds.shipped_environment().popitem()[1] in line


def test_bridge_warns_when_its_profile_is_not_in_force():
    """The other generation's file is rejected whole: the bridge says so in one WARN."""
    pytest.importorskip("rclpy", reason="rclpy is needed")
    other = PROFILES[5 - (dds.fast_dds_generation() or dds.DEFAULT_GENERATION)]
    line, segment = _bridge_profile_line(162, {**_clean_env(), dds.OVERRIDE_VARIABLE: str(other)})
    assert segment < dds.LARGE_SEGMENT_BYTES
    assert re.search(r"\bWARN\b", line) and "DDS profile NOT in force" in line and "Fix:" in line


_ACK_PROBE = r"""
import sys, time
import rclpy
from rclpy.duration import Duration
from rclpy.qos import QoSProfile, ReliabilityPolicy
from std_msgs.msg import UInt64
from acres_sim.middleware import dds
dds.apply_profile()
rclpy.init()
node = rclpy.create_node("ack_probe")
role = sys.argv[1]
qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
if role == "sub":
    node.create_subscription(UInt64, "ack_probe", lambda m: None, qos)
    print("READY", flush=True)
    rclpy.spin(node)
else:
    pub = node.create_publisher(UInt64, "ack_probe", qos)
    while pub.get_subscription_count() == 0:
        time.sleep(0.01)
    time.sleep(0.5)
    waits = []
    for i in range(5):
        pub.publish(UInt64(data=i))
        t0 = time.monotonic()
        acked = pub.wait_for_all_acked(Duration(seconds=10))
        waits.append(time.monotonic() - t0 if acked else float("inf"))
    print("WAITS " + " ".join(f"{w:.4f}" for w in waits), flush=True)
"""


def test_small_reliable_samples_are_acknowledged_without_waiting_for_the_periodic_heartbeat():
    """With the profile's 2 ms heartbeat a small reliable sample is acknowledged at once; with the
    default (3 s) each waits for the next periodic heartbeat. A subscriber with default settings."""
    pytest.importorskip("rclpy", reason="rclpy is needed")
    env = ros_env(163, **_clean_env())
    sub = Process([sys.executable, "-c", _ACK_PROBE, "sub"], {**env, dds.OVERRIDE_VARIABLE: "off"})
    try:
        sub.wait_for("READY", 30)
        pub = Process([sys.executable, "-c", _ACK_PROBE, "pub"], env)
        waits = [float(w) for w in pub.wait_for("WAITS ", 60).split("WAITS ", 1)[1].split()]
        pub.stop()
    finally:
        sub.stop()
    # Half the default period: a wait this long means the profile's heartbeat is not in force.
    assert max(waits) < 1.5, waits


def test_default_subscriber_process_receives_every_cloud_and_image():
    pytest.importorskip("rclpy", reason="rclpy is needed")
    result = measure_large_delivery(160, seconds=5.0)
    assert "DDS profile in force" in result["profile"], result["profile"]
    for kind in ("lidar", "camera"):
        stats = result[kind]
        assert stats["sent"] >= 30, stats  # 10 Hz for ~4 s
        assert stats["missing"] == 0, f"{kind}: {stats}"
