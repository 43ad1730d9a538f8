"""The errors a new user meets first are one clear line that says what to do: the game not running
(wrong port), a bad parameter value, a subscriber whose QoS the bridge does not offer.
Real bridge processes; ROS_DOMAIN_ID 190..191."""

from __future__ import annotations

import json

from support.bridge import GATE, Graph, ScriptedServer, frame, free_port, small_hello_json, start_bridge
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import PointCloud2

from acres_sim.stream.protocol import FrameType


def test_game_not_running_says_how_to_start_it():
    port = free_port()
    bridge = start_bridge(port, 190)
    try:
        line = bridge.wait_for("not reachable", 20)
    finally:
        assert bridge.stop() == 0
    assert f"-SensorStream={port}" in line and "port parameter" in line, line


def test_bad_parameter_value_is_one_line_and_exit_2():
    bridge = start_bridge(free_port(), 190, ["jpeg_quality:=500"])
    code = bridge.proc.wait(30)
    bridge.stop()
    out = bridge.output()
    assert code == 2, out
    assert "parameter jpeg_quality must be 1..100, got 500" in out
    assert "Traceback" not in out


def test_incompatible_qos_subscriber_is_reported():
    server = ScriptedServer([[frame(FrameType.HELLO, 0, 0.0, json.dumps(small_hello_json()).encode()), GATE]])
    graph = Graph(191)
    bridge = start_bridge(server.port, 191, ["qos_reliability:=best_effort"])
    try:
        bridge.wait_for("Hello from agent tiny", 30)
        # rviz2's default: reliable. A best-effort publisher cannot serve it.
        reliable = QoSProfile(depth=5, reliability=ReliabilityPolicy.RELIABLE)
        graph.subscribe(PointCloud2, "lidar/points", reliable)
        line = bridge.wait_for("asks for a QoS this publisher does not offer", 20)
        graph.spin_for(0.5)
    finally:
        assert bridge.stop() == 0
        graph.close()
        server.close()
    assert "/lidar/points" in line and "RELIABILITY" in line and "qos_reliability:=reliable" in line, line
