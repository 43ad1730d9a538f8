"""launch/bridge.launch.py: the plan (no launch needed), the rviz config, and -- when launch and
launch_ros are installed -- the nodes the launch description generates."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest
import yaml

from acres_sim.nodes.launch_plan import LaunchPlanError, plan_launch, split_list

REPO = Path(__file__).resolve().parents[2]
LAUNCH_FILE = REPO / "launch" / "bridge.launch.py"


def test_one_agent():
    plan = plan_launch()
    assert len(plan.bridges) == 1
    b = plan.bridges[0]
    assert (b.agent, b.port, b.namespace, b.frame_prefix, b.publish_clock) == (
        "polaris", 5601, "/polaris", "", True)
    assert b.parameters("127.0.0.1") == {"host": "127.0.0.1", "port": 5601, "frame_prefix": "",
                                         "publish_clock": True}
    assert plan.fake_game is None and not plan.rviz and plan.use_sim_time and plan.log_level == "info"


def test_two_agents_get_prefixes_and_only_the_first_publishes_clock():
    plan = plan_launch(agents="polaris, maxxum", ports="5601,5602", fake_game="true", rviz="True",
                       log_level="DEBUG")
    assert [(b.agent, b.port, b.namespace, b.frame_prefix, b.publish_clock) for b in plan.bridges] == [
        ("polaris", 5601, "/polaris", "polaris/", True), ("maxxum", 5602, "/maxxum", "maxxum/", False)]
    assert plan.fake_game is not None
    assert plan.fake_game.parameters() == {"ports": [5601, 5602], "vehicles": ["polaris", "maxxum"],
                                           "agents": ["polaris", "maxxum"], "control_port": 0,
                                           "lockstep": False}
    assert plan.rviz and plan.log_level == "debug" and plan.sim_control is None


def test_a_lockstep_session_driven_from_ros():
    plan = plan_launch(agents="polaris,maxxum", ports="5601,5602", fake_game="true", lockstep="true",
                       control_port="5700")
    assert plan.fake_game.parameters()["control_port"] == 5700 and plan.fake_game.parameters()["lockstep"]
    assert plan.sim_control.parameters() == {"control_port": 5700, "agents": ["polaris", "maxxum"],
                                             "vehicle_bridges": False, "episode_log": "",
                                             "episode_replay": ""}
    real_game = plan_launch(control_port=5700)  # sim_control for the real game's channel
    assert real_game.fake_game is None and real_game.sim_control.agents == ("polaris",)


def test_a_driven_lockstep_session_gets_a_vehicle_bridge_per_agent():
    plan = plan_launch(agents="polaris,maxxum", ports="5601,5602", fake_game="true", lockstep="true",
                       control_port="5700", vehicle_ports="5611,5612")
    assert [(v.namespace, v.parameters()) for v in plan.vehicle_bridges] == [
        ("/polaris", {"vehicle_port": 5611, "lockstep": True, "frame_id": "polaris/base_footprint"}),
        ("/maxxum", {"vehicle_port": 5612, "lockstep": True, "frame_id": "maxxum/base_footprint"})]
    assert plan.fake_game.parameters()["vehicle_ports"] == [5611, 5612]
    assert plan.sim_control.parameters()["vehicle_bridges"] is True
    assert plan_launch().vehicle_bridges == () and "vehicle_ports" not in plan_launch(
        fake_game="true").fake_game.parameters()


def test_vehicles_can_differ_from_agent_names():
    plan = plan_launch(agents="a1,a2", ports="7001,7002", fake_game=True, vehicles="maxxum,polaris")
    assert plan.fake_game.vehicles == ("maxxum", "polaris") and plan.fake_game.agents == ("a1", "a2")


def test_every_agent_gets_a_description_and_a_robot_state_publisher_where_its_vehicle_is_known():
    plan = plan_launch(agents="polaris,tractor", ports="7001,7002", robot_state_publisher=True)
    assert [(d.namespace, d.parameters()) for d in plan.descriptions] == [
        ("/polaris", {"agent": "polaris", "frame_prefix": "polaris/", "vehicle": "polaris",
                      "robot_state_publisher": True}),
        ("/tractor", {"agent": "tractor", "frame_prefix": "tractor/", "vehicle": "",  # /sim/agents says
                      "robot_state_publisher": False})]
    urdf = plan.descriptions[0].robot_state_publisher_parameters(True)["robot_description"]
    assert '<robot name="polaris">' in urdf and '<link name="polaris/front_left_wheel_link">' in urdf
    named = plan_launch(agents="a1", vehicles="maxxum", robot_state_publisher=False).descriptions[0]
    assert (named.vehicle, named.frame_prefix, named.robot_state_publisher) == ("maxxum", "", False)


@pytest.mark.parametrize("kwargs,message", [
    ({"agents": "polaris,maxxum", "ports": "5601"}, "same length"),
    ({"agents": "a,a", "ports": "1,2"}, "distinct"),
    ({"agents": "a,b", "ports": "1,1"}, "distinct"),
    ({"agents": "a", "ports": "x"}, "integers"),
    ({"agents": "bad-name", "ports": "1"}, "valid ROS name"),
    ({"agents": "", "ports": ""}, "empty"),
    ({"fake_game": "maybe"}, "fake_game"),
    ({"log_level": "loud"}, "log_level"),
    ({"control_port": "x"}, "control_port"),
    ({"control_port": "5601"}, "other than the stream ports"),
    ({"control_port": "70000"}, "control_port"),
    ({"fake_game": "true", "lockstep": "true"}, "needs a control_port"),
    ({"lockstep": "true", "control_port": "5700"}, "fake_game:=true"),
    ({"agents": "a,b", "ports": "1,2", "vehicle_ports": "5611"}, "one port per agent"),
    ({"vehicle_ports": "x"}, "vehicle_ports must be integers"),
    ({"vehicle_ports": "5601"}, "other than the stream"),
    ({"agents": "a,b", "ports": "1,2", "vehicle_ports": "7,7"}, "distinct"),
])
def test_bad_arguments_say_what_is_wrong(kwargs, message):
    with pytest.raises(LaunchPlanError, match=message):
        plan_launch(**kwargs)


def test_split_list():
    assert split_list(" a, b,,c ") == ["a", "b", "c"]


def test_launch_file_declares_the_interface_arguments():
    tree = ast.parse(LAUNCH_FILE.read_text())
    arguments = next(node for node in ast.walk(tree) if isinstance(node, ast.Assign)
                     and any(getattr(t, "id", "") == "ARGUMENTS" for t in node.targets))
    names = {elt.elts[0].value for elt in arguments.value.elts}
    assert {"agents", "ports", "host", "fake_game", "rviz", "use_sim_time", "params_file",
            "log_level", "control_port", "lockstep", "vehicle_ports"} <= names


def test_rviz_config_has_the_displays():
    doc = yaml.safe_load((REPO / "config" / "acres_sim.rviz").read_text())
    manager = doc["Visualization Manager"]
    assert manager["Global Options"]["Fixed Frame"] == "map"
    displays = {d["Class"]: d for d in manager["Displays"]}
    for cls in ("rviz_default_plugins/Grid", "rviz_default_plugins/TF", "rviz_default_plugins/PointCloud2",
                "rviz_default_plugins/Image", "rviz_default_plugins/Odometry"):
        assert cls in displays, cls
    assert displays["rviz_default_plugins/PointCloud2"]["Topic"]["Value"] == "/polaris/lidar/points"
    assert displays["rviz_default_plugins/Image"]["Topic"]["Value"] == "/polaris/camera/image_raw"
    assert displays["rviz_default_plugins/Odometry"]["Topic"]["Value"] == "/polaris/ins/odom"


def _generated_nodes(arguments: dict[str, str]):
    launch = pytest.importorskip("launch", reason="the launch package is not installed")
    pytest.importorskip("launch_ros", reason="the launch_ros package is not installed")
    from launch.actions import DeclareLaunchArgument, OpaqueFunction
    from launch_ros.actions import Node

    spec = importlib.util.spec_from_file_location("bridge_launch", LAUNCH_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    description = module.generate_launch_description()
    context = launch.LaunchContext()
    for key, value in arguments.items():
        context.launch_configurations[key] = value
    nodes = []
    for entity in description.entities:
        if isinstance(entity, DeclareLaunchArgument):
            entity.visit(context)  # fills in the defaults of the arguments not given
        elif isinstance(entity, OpaqueFunction):
            nodes += [a for a in (entity.visit(context) or []) if isinstance(a, Node)]
    return nodes


def _described(agents: int) -> list[tuple[str, str]]:
    """Each agent's vehicle_description, and its robot_state_publisher where that is installed."""
    from ament_index_python.packages import PackageNotFoundError, get_package_share_directory

    try:
        get_package_share_directory("robot_state_publisher")
        one = [("acres_sim", "vehicle_description"), ("robot_state_publisher", "robot_state_publisher")]
    except PackageNotFoundError:
        one = [("acres_sim", "vehicle_description")]
    return one * agents


def test_launch_description_one_agent():
    nodes = _generated_nodes({})
    assert [(n.node_package, n.node_executable) for n in nodes] == [
        ("acres_sim", "sim_bridge"), *_described(1)]


def test_launch_description_two_agents_with_fake_game_and_rviz():
    nodes = _generated_nodes({"agents": "polaris,maxxum", "ports": "5601,5602", "fake_game": "true",
                              "rviz": "true"})
    assert [(n.node_package, n.node_executable) for n in nodes] == [
        ("acres_sim", "fake_game"), ("acres_sim", "sim_bridge"), ("acres_sim", "sim_bridge"),
        *_described(2), ("rviz2", "rviz2")]


def test_launch_description_lockstep_session_starts_sim_control():
    nodes = _generated_nodes({"agents": "polaris,maxxum", "ports": "5601,5602", "fake_game": "true",
                              "lockstep": "true", "control_port": "5700"})
    assert [(n.node_package, n.node_executable) for n in nodes] == [
        ("acres_sim", "fake_game"), ("acres_sim", "sim_bridge"), ("acres_sim", "sim_bridge"),
        *_described(2), ("acres_sim", "sim_control")]


def test_launch_description_driven_session_starts_vehicle_bridges():
    nodes = _generated_nodes({"agents": "polaris,maxxum", "ports": "5601,5602", "fake_game": "true",
                              "lockstep": "true", "control_port": "5700", "vehicle_ports": "5611,5612"})
    assert [(n.node_package, n.node_executable) for n in nodes] == [
        ("acres_sim", "fake_game"), ("acres_sim", "sim_bridge"), ("acres_sim", "sim_bridge"),
        ("acres_sim", "vehicle_bridge"), ("acres_sim", "vehicle_bridge"), *_described(2),
        ("acres_sim", "sim_control")]
