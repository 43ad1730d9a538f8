"""acres_sim.nodes.parameters: every node's parameter table (declared once, documented in its
config/<file>.yaml), the checks with their messages, the loopback rule and the converter's settings.
No ROS graph."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml

from acres_sim.convert.settings import ConvertSettings
from acres_sim.nodes.parameters import (
    BRIDGE,
    FAKE_GAME,
    NODES,
    SIM_CONTROL,
    VEHICLE_BRIDGE,
    ParameterError,
    bridge_config,
    fake_game_config,
    sim_control_config,
    vehicle_bridge_config,
    vehicle_description_config,
)
from acres_sim.net.loopback import NotLoopbackError, require_loopback

PARAMETERS = BRIDGE.specs

REPO = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------------------------------------
# require_loopback


@pytest.mark.parametrize("host", ["127.0.0.1", "127.1.2.3", "::1", "localhost", "LOCALHOST", "[::1]",
                                  "::ffff:127.0.0.1"])
def test_loopback_hosts_are_accepted(host):
    assert require_loopback(host) == host.strip()


@pytest.mark.parametrize("host", ["0.0.0.0", "10.0.0.1", "192.168.1.5", "example.com", "::", "",
                                  "128.0.0.1", "fe80::1"])
def test_other_hosts_are_refused_with_a_clear_message(host):
    with pytest.raises(NotLoopbackError, match="not a loopback address"):
        require_loopback(host)


# ---------------------------------------------------------------------------------------------
# Parameters: declared once, documented in config/bridge.yaml, validated with clear messages


@pytest.mark.parametrize("table", NODES, ids=lambda t: t.node)
def test_every_node_yaml_documents_every_parameter_with_its_default(table):
    text = (REPO / "config" / table.config_file).read_text()
    doc = yaml.safe_load(text)
    params = doc["/**"]["ros__parameters"]
    # A default taken from another parameter, or none, is not written down; the file says so in a
    # comment.
    derived = {p.name for p in table.specs if p.default_from or p.default is None}
    assert set(params) == set(table.names) - derived
    lines = text.splitlines()
    for name in derived:
        assert any(line.strip().startswith(f"# {name}:") for line in lines), name
    for spec in table.specs:
        assert spec.description
        if spec.name in derived:
            continue
        assert params[spec.name] == spec.default, spec.name
        assert type(params[spec.name]) is type(spec.default), spec.name
        at = next(i for i, line in enumerate(lines) if line.strip().startswith(spec.name + ":"))
        assert lines[at - 1].strip().startswith("#"), f"{spec.name} has no comment"


@pytest.mark.parametrize("table,make", [(BRIDGE, bridge_config), (SIM_CONTROL, sim_control_config),
                                        (FAKE_GAME, fake_game_config),
                                        (VEHICLE_BRIDGE, vehicle_bridge_config)],
                         ids=lambda t: getattr(t, "node", ""))
def test_the_defaults_are_a_valid_configuration_and_unknown_names_change_nothing(table, make):
    assert make({}) == make(table.defaults) == make({**table.defaults, "no_such_parameter": 1})


@pytest.mark.parametrize("values,message", [
    ({"control_port": 0}, "control_port"),
    ({"agents": []}, "agents"),
    ({"agents": ["a", "a"]}, "agents"),
    ({"barrier_timeout_s": 0.0}, "barrier_timeout_s must be positive"),
    ({"feedback_steps": 1201}, "feedback_steps must be 1..1200"),
    ({"world_frame": ""}, "world_frame"),
])
def test_bad_sim_control_values_are_refused(values, message):
    with pytest.raises(ParameterError, match=message):
        sim_control_config(values)


@pytest.mark.parametrize("values,message", [
    ({"vehicle_port": 0}, "vehicle_port"),
    ({"command_timeout_s": 0.0}, "command_timeout_s must be positive"),
    ({"speed_kp": -1.0}, "speed_kp and speed_ki must be >= 0"),
    ({"cmd_vel_stamped": "yes"}, "cmd_vel_stamped must be true or false"),
    ({"reconnect_min_s": 6.0}, "reconnect_min_s"),
])
def test_bad_vehicle_bridge_values_are_refused(values, message):
    with pytest.raises(ParameterError, match=message):
        vehicle_bridge_config(values)


@pytest.mark.parametrize("values,message", [
    ({"lockstep": True}, "lockstep needs control_port"),
    ({"ports": [5601, 5602]}, "2 port"),
    ({"vehicles": ["tractor"]}, "unknown vehicle"),
    ({"flavor": "arcade"}, "flavor"),
    ({"realtime_factor": -1.0}, "realtime_factor"),
    ({"control_port": 70000}, "control_port"),
])
def test_bad_fake_game_values_are_refused(values, message):
    with pytest.raises(ParameterError, match=message):
        fake_game_config(values)


def test_fake_game_agents_default_to_the_vehicle_names():
    config = fake_game_config({"ports": [5601, 5602], "vehicles": ["polaris", "maxxum"]})
    assert [a.agent for a in config.session.agents] == ["polaris", "maxxum"]
    assert config.control_port is None
    named = fake_game_config({"agents": ["x"], "control_port": 5700, "lockstep": True})
    assert [a.agent for a in named.session.agents] == ["x"] and named.control_port == 5700


def test_parameter_table_has_the_interface_parameters():
    names = {p.name for p in PARAMETERS}
    assert names == {
        "host", "port", "frame_prefix", "world_frame", "utm_frame", "publish_clock", "tf_source",
        "lidar_fields", "lidar_stamp",
        "publish_ground_truth", "qos_reliability", "qos_depth", "reconnect_min_s", "reconnect_max_s",
        "max_payload_bytes", "stats_period_s", "jpeg_quality", "imu_orientation_variance",
        "imu_angular_velocity_variance",
        "imu_linear_acceleration_variance", "odom_orientation_variance", "odom_linear_velocity_variance",
        "odom_angular_velocity_variance"}
    defaults = {p.name: p.default for p in PARAMETERS}
    assert defaults["max_payload_bytes"] == 64 * 1024 * 1024 and defaults["stats_period_s"] == 10


@pytest.mark.parametrize("values,message", [
    ({"host": "10.0.0.7"}, "not a loopback address"),
    ({"port": 0}, "port"),
    ({"tf_source": "gps"}, "tf_source"),
    ({"qos_reliability": "sometimes"}, "qos_reliability"),
    ({"qos_depth": 0}, "qos_depth"),
    ({"reconnect_min_s": 3.0, "reconnect_max_s": 1.0}, "reconnect"),
    ({"imu_orientation_variance": -1.0}, "imu_orientation_variance"),
    ({"world_frame": ""}, "world_frame"),
    ({"jpeg_quality": 0}, "jpeg_quality must be 1..100"),
])
def test_bad_parameter_values_are_refused(values, message):
    with pytest.raises(ParameterError, match=message):
        bridge_config(values)


def test_integer_values_are_accepted_for_float_parameters():
    cfg = bridge_config({"stats_period_s": 5, "reconnect_max_s": 2, "odom_orientation_variance": 1})
    assert cfg.stats_period_s == 5.0 and isinstance(cfg.stats_period_s, float)


@pytest.mark.parametrize("settings,message", [
    ({"tf_source": "odom"}, "tf_source"),
    ({"lidar_fields": "xyz"}, "lidar_fields"),
    ({"lidar_stamp": "middle"}, "lidar_stamp"),
    ({"utm_frame": ""}, "utm_frame"),
    ({"odom_linear_velocity_variance": float("nan")}, "odom_linear_velocity_variance"),
    ({"imu_angular_velocity_variance": True}, "imu_angular_velocity_variance"),
])
def test_convert_settings_refuse_what_the_converter_cannot_do(settings, message):
    with pytest.raises(ValueError, match=message):
        ConvertSettings(**settings)


def test_parameters_become_the_converter_settings():
    cfg = bridge_config({"frame_prefix": "a/", "tf_source": "ground_truth", "lidar_fields": "xyzirt",
                         "imu_orientation_variance": 0.5})
    assert cfg.convert == ConvertSettings(frame_prefix="a/", tf_source="ground_truth", lidar_fields="xyzirt",
                                          imu_orientation_variance=0.5)


# The ranges the descriptors advertise agree with each node's own check: the ends are accepted,
# a step beyond is refused (0 itself stays refused where the check wants a positive number).
_CONFIG = {"sim_bridge": bridge_config, "sim_control": sim_control_config,
           "vehicle_bridge": vehicle_bridge_config, "fake_game": fake_game_config,
           "vehicle_description": lambda values: vehicle_description_config(values, "/polaris")}


@pytest.mark.parametrize("table, spec", [(t, s) for t in NODES for s in t.specs if s.range is not None],
                         ids=lambda v: getattr(v, "name", getattr(v, "node", "")))
def test_every_advertised_range_is_the_nodes_own_check(table, spec):
    check = _CONFIG[table.node]
    low, high = spec.range
    assert isinstance(spec.default, (int, float)) and low <= spec.default <= high
    below = low - 1 if isinstance(spec.default, int) else low - 1e-3
    with pytest.raises(ParameterError):
        check({spec.name: below})
    if math.isfinite(high) and high < 1 << 40:
        check({spec.name: high})
        above = high + 1 if isinstance(spec.default, int) else high + 1e-3
        with pytest.raises(ParameterError):
            check({spec.name: above})
    if low > 0 or isinstance(spec.default, int):
        check({spec.name: low})


def test_vehicle_description_names_its_agent_by_its_namespace_and_refuses_an_unknown_vehicle():
    assert vehicle_description_config({}, "/polaris").agent == "polaris"
    assert vehicle_description_config({"agent": "a2"}, "/polaris").agent == "a2"
    with pytest.raises(ParameterError, match="no namespace"):
        vehicle_description_config({}, "/")
    with pytest.raises(ParameterError, match="polaris, maxxum, got 'combine'"):
        vehicle_description_config({"vehicle": "combine"}, "/polaris")
