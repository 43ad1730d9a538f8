"""acres_sim.parameters: the parameter table (declared once, documented in config/bridge.yaml),
the checks with their messages, the loopback rule and the converter's settings. No ROS graph."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from acres_sim.parameters import (
    PARAMETERS,
    BridgeConfigError,
    ConvertSettings,
    NotLoopbackError,
    config_from_values,
    require_loopback,
)

REPO = Path(__file__).resolve().parent.parent


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


def test_bridge_yaml_documents_every_parameter_with_its_default():
    text = (REPO / "config" / "bridge.yaml").read_text()
    doc = yaml.safe_load(text)
    params = doc["/**"]["ros__parameters"]
    assert set(params) == {p.name for p in PARAMETERS}
    lines = text.splitlines()
    for spec in PARAMETERS:
        assert params[spec.name] == spec.default, spec.name
        assert type(params[spec.name]) is type(spec.default), spec.name
        at = next(i for i, line in enumerate(lines) if line.strip().startswith(spec.name + ":"))
        assert lines[at - 1].strip().startswith("#"), f"{spec.name} has no comment"
        assert spec.description


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
    with pytest.raises(BridgeConfigError, match=message):
        config_from_values(values)


def test_integer_values_are_accepted_for_float_parameters():
    cfg = config_from_values({"stats_period_s": 5, "reconnect_max_s": 2, "odom_orientation_variance": 1})
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
    cfg = config_from_values({"frame_prefix": "a/", "tf_source": "ground_truth", "lidar_fields": "xyzirt",
                              "imu_orientation_variance": 0.5})
    assert cfg.convert == ConvertSettings(frame_prefix="a/", tf_source="ground_truth", lidar_fields="xyzirt",
                                          imu_orientation_variance=0.5)
