"""vehicle_bridge where ds_dbw_msgs does not import (Kilted: not released there): one WARN that says
how to get the drive-by-wire topics, and Ackermann and Twist still drive. ROS_DOMAIN_ID 126."""

from __future__ import annotations

import sys

import pytest

rclpy = pytest.importorskip("rclpy", reason="needs rclpy")
pytest.importorskip("ackermann_msgs", reason="ackermann_msgs is not installed")

from support.bridge import Graph, Process, free_ports, ros_env, start_fake_game  # noqa: E402
from ackermann_msgs.msg import AckermannDriveStamped  # noqa: E402
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy  # noqa: E402
from std_msgs.msg import Header  # noqa: E402

DOMAIN = 126
# The node as a user without ds_dbw_msgs runs it: the import fails as it would there.
WITHOUT_DBW = ("import sys; sys.modules['ds_dbw_msgs'] = None; "
               "from acres_sim.nodes.vehicle_bridge import main; sys.exit(main())")


def test_without_ds_dbw_msgs_ackermann_drives_and_one_warn_says_how():
    port, vport = free_ports(2)
    game = start_fake_game(["--port", str(port), "--vehicle-ports", str(vport)], DOMAIN)
    node = Process([sys.executable, "-c", WITHOUT_DBW, "--ros-args", "-p", f"vehicle_port:={vport}",
                    "-r", "__ns:=/polaris"], ros_env(DOMAIN), "vehicle_bridge without ds_dbw_msgs")
    graph = Graph(DOMAIN)
    try:
        node.wait_for("vehicle polaris of agent polaris", 60)
        held = graph.subscribe(Header, "/polaris/vehicle/held_command", QoSProfile(
            depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE))
        graph.subscribe(AckermannDriveStamped, "/polaris/vehicle/ackermann_state")
        command = graph.node.create_publisher(AckermannDriveStamped, "/polaris/vehicle/ackermann_cmd", 10)
        graph.wait_matched(["/polaris/vehicle/held_command", "/polaris/vehicle/ackermann_state"], 30)
        graph.spin_until(lambda: command.get_subscription_count() > 0, 30, "the node's subscription")
        msg = AckermannDriveStamped()
        msg.drive.speed = 2.0
        for _ in range(10):
            command.publish(msg)
            graph.spin_for(0.05)
        graph.spin_until(lambda: held and held[-1][1].frame_id == "ackermann", 10, "the command held")
        topics = {name for name, _ in graph.node.get_topic_names_and_types()}
        assert "/polaris/vehicle/ackermann_state" in topics and "/polaris/cmd_vel" in topics
        subsystems = ("steering", "throttle", "brake", "gear")
        dbw_topics = [t for t in topics if any(f"/vehicle/{s}/" in t for s in subsystems)]
        assert not dbw_topics, dbw_topics
    finally:
        graph.close()
        code = node.stop()
        game.stop()
    log = node.output()
    assert code == 0
    assert log.count("ds_dbw_msgs does not import") == 1
    assert "apt install ros-$ROS_DISTRO-ds-dbw-msgs" in log
