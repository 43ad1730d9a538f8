"""config/acres_sim.rviz against rviz2's real plugin classes and the bridge's own topic plan: every
display class exists in rviz_default_plugins, every topic is one the bridge publishes with a message
type that display reads, its QoS matches the bridge's, and the frames are the bridge's frames."""

from __future__ import annotations

from pathlib import Path

import yaml
from support.page_examples import POLARIS_HELLO_JSON

from acres_sim.convert.mount_tree import BASE_FOOTPRINT
from acres_sim.nodes.parameters import BRIDGE
from acres_sim.stream.hello import parse_hello
from acres_sim.convert.topic_plan import topic_plan

REPO = Path(__file__).resolve().parents[2]

# rviz_default_plugins' plugins_description.xml (display class -> message types it subscribes to).
_P = "rviz_default_plugins/"
DISPLAYS = {
    _P + "Grid": set(), _P + "TF": set(), _P + "Axes": set(), _P + "PointCloud2": {"PointCloud2"},
    _P + "Image": {"Image"}, _P + "Camera": {"Image", "CompressedImage"}, _P + "Odometry": {"Odometry"},
    _P + "Path": {"Path"}, _P + "Marker": {"Marker"},
}
TOOLS = {_P + name for name in ("Interact", "MoveCamera", "Select", "FocusCamera", "Measure", "SetGoal",
                                "SetInitialPose", "PublishPoint")}
VIEWS = {_P + name for name in ("Orbit", "XYOrbit", "FPS", "TopDownOrtho")}
# How rviz2 writes the bridge's QoS (reliable, keep last, volatile) in a display's Topic block.
BRIDGE_QOS = {"Reliability Policy": "Reliable", "History Policy": "Keep Last",
              "Durability Policy": "Volatile"}


def _config() -> dict:
    return yaml.safe_load((REPO / "config" / "acres_sim.rviz").read_text())


def _plan() -> dict[str, str]:
    """Absolute topic -> message type name, for the first agent of the launch file (/polaris)."""
    plan = topic_plan(parse_hello(POLARIS_HELLO_JSON))
    return {(t if t.startswith("/") else f"/polaris/{t}"): kind for t, (kind, _) in plan.items()}


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
        topic = display.get("Topic")
        if topic is None:
            continue
        shown += 1
        name = topic["Value"]
        assert name in plan, f"{display['Name']}: {name} is not a topic of the bridge"
        assert plan[name] in DISPLAYS[display["Class"]], \
            f"{display['Name']}: {display['Class']} cannot show {plan[name]}"
        for key, value in BRIDGE_QOS.items():
            assert topic[key] == value, f"{display['Name']}: {key} {topic[key]} (the bridge offers {value})"
        assert topic["Depth"] >= 1
    assert shown >= 3


def test_frames_are_the_bridge_frames():
    doc = _config()["Visualization Manager"]
    assert doc["Global Options"]["Fixed Frame"] == BRIDGE.defaults["world_frame"]
    assert doc["Views"]["Current"]["Target Frame"] == BASE_FOOTPRINT
