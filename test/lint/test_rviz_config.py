"""config/acres_sim.rviz against rviz2's real plugin classes and the package's own topics: every
display class exists in rviz_default_plugins (its plugins_description.xml where rviz2 is installed),
every topic is one the bridge, vehicle_description or sim_control publishes with a message type that
display reads, its QoS matches the publisher's, and the frames are the bridge's frames; the config a
launch writes for its agents shows each agent's RobotModel."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml
from support.page_examples import POLARIS_HELLO_JSON

from acres_sim.convert.mount_tree import BASE_FOOTPRINT
from acres_sim.nodes.launch_plan import rviz_config
from acres_sim.nodes.parameters import BRIDGE
from acres_sim.stream.hello import parse_hello
from acres_sim.convert.topic_plan import topic_plan

REPO = Path(__file__).resolve().parents[2]

# rviz_default_plugins' plugins_description.xml (display class -> message types it subscribes to).
_P = "rviz_default_plugins/"
DISPLAYS = {
    _P + "Grid": set(), _P + "TF": set(), _P + "Axes": set(), _P + "PointCloud2": {"PointCloud2"},
    _P + "Image": {"Image"}, _P + "Camera": {"Image", "CompressedImage"}, _P + "Odometry": {"Odometry"},
    _P + "Path": {"Path"}, _P + "Marker": {"Marker"}, _P + "MarkerArray": {"MarkerArray"},
    _P + "RobotModel": {"String"},
}
TOOLS = {_P + name for name in ("Interact", "MoveCamera", "Select", "FocusCamera", "Measure", "SetGoal",
                                "SetInitialPose", "PublishPoint")}
VIEWS = {_P + name for name in ("Orbit", "XYOrbit", "FPS", "TopDownOrtho")}
# How rviz2 writes the bridge's QoS (reliable, keep last, volatile) in a display's Topic block.
BRIDGE_QOS = {"Reliability Policy": "Reliable", "History Policy": "Keep Last",
              "Durability Policy": "Volatile"}
LATCHED_QOS = {**BRIDGE_QOS, "Durability Policy": "Transient Local"}
# Beside the bridge's: vehicle_description's robot_description and sim_control's markers (latched).
LATCHED = {"/polaris/robot_description": "String", "/sim/markers": "MarkerArray"}


def _config() -> dict:
    return yaml.safe_load((REPO / "config" / "acres_sim.rviz").read_text())


def _plan() -> dict[str, str]:
    """Absolute topic -> message type name, for the first agent of the launch file (/polaris)."""
    plan = topic_plan(parse_hello(POLARIS_HELLO_JSON))
    bridge = {(t if t.startswith("/") else f"/polaris/{t}"): kind for t, (kind, _) in plan.items()}
    return {**bridge, **LATCHED}


def _topic(display: dict) -> dict | None:
    return display.get("Topic") or display.get("Description Topic")


def test_every_display_tool_and_view_is_a_real_rviz2_class():
    doc = _config()["Visualization Manager"]
    for display in doc["Displays"]:
        assert display["Class"] in DISPLAYS, display["Class"]
    for tool in doc["Tools"]:
        assert tool["Class"] in TOOLS, tool["Class"]
    assert doc["Views"]["Current"]["Class"] in VIEWS
    assert doc["Transformation"]["Current"]["Class"] == "rviz_default_plugins/TF"


def test_every_topic_is_published_by_the_bridge_with_a_matching_type_and_qos():
    plan = _plan()
    shown = 0
    for display in _config()["Visualization Manager"]["Displays"]:
        topic = _topic(display)
        if topic is None:
            continue
        shown += 1
        name = topic["Value"]
        assert name in plan, f"{display['Name']}: {name} is not a topic of the bridge"
        assert plan[name] in DISPLAYS[display["Class"]], \
            f"{display['Name']}: {display['Class']} cannot show {plan[name]}"
        offered = LATCHED_QOS if name in LATCHED else BRIDGE_QOS
        for key, value in offered.items():
            assert topic[key] == value, f"{display['Name']}: {key} {topic[key]} (offered: {value})"
        assert topic["Depth"] >= 1
    assert shown >= 5


def test_frames_are_the_bridge_frames():
    doc = _config()["Visualization Manager"]
    assert doc["Global Options"]["Fixed Frame"] == BRIDGE.defaults["world_frame"]
    assert doc["Views"]["Current"]["Target Frame"] == BASE_FOOTPRINT


def test_the_display_classes_are_in_rviz2s_plugin_list_where_rviz2_is_installed():
    """The table above against the installed rviz_default_plugins' own plugin list."""
    ament = pytest.importorskip("ament_index_python.packages", reason="ament_index_python is not installed")
    try:
        share = Path(ament.get_package_share_directory("rviz_default_plugins"))
    except ament.PackageNotFoundError:
        pytest.skip("rviz_default_plugins is not installed (no rviz2 wheels): checked against the table")
    xml = ET.parse(share / "plugins_description.xml")
    listed = {c.get("name") or c.get("type") for c in xml.iter("class")}
    used = {d["Class"] for d in _config()["Visualization Manager"]["Displays"]}
    assert used <= listed, used - listed


def test_a_launchs_config_shows_every_agent_it_names():
    text = rviz_config((REPO / "config" / "acres_sim.rviz").read_text(), ["tractor1", "tractor2"])
    displays = yaml.safe_load(text)["Visualization Manager"]["Displays"]
    models = [d for d in displays if d["Class"] == _P + "RobotModel"]
    assert [(d["Name"], d["Description Topic"]["Value"]) for d in models] == [
        ("tractor1", "/tractor1/robot_description"), ("tractor2", "/tractor2/robot_description")]
    topics = [_topic(d)["Value"] for d in displays if _topic(d) is not None]
    assert "/tractor1/lidar/points" in topics and "/sim/markers" in topics
    assert not [t for t in topics if t.startswith("/polaris/")]
