"""Driving in real time over real processes (ROS_DOMAIN_ID 125): closed loops through each input,
the watchdog in world time, refused bad input, and the LiDAR of a driven vehicle on the terrain.
Figures print with pytest -s."""

from __future__ import annotations

import math

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="the driving tests need rclpy")
simulation_interfaces = pytest.importorskip(
    "simulation_interfaces", reason="simulation_interfaces is not installed (rosdep key of the same name)")
ackermann_msgs = pytest.importorskip("ackermann_msgs", reason="ackermann_msgs is not installed")

from std_msgs.msg import Empty  # noqa: E402
from support.driving import (  # noqa: E402
    DriveSession,
    _sec,
    check_following,
    dbw,
    follow,
    needs_dbw,
)


@pytest.fixture(scope="module")
def realtime():
    s = DriveSession(125, lockstep=False, cached=False)
    yield s
    assert s.close() == [0] * len(s.processes), s.logs()[-3000:]


@pytest.mark.parametrize("how", ["ackermann", "cmd_vel", pytest.param("dbw", marks=needs_dbw)])
def test_pure_pursuit_follows_a_figure_eight_in_real_time(realtime, how):
    result = follow(realtime, "polaris", how, seconds=12.0)
    print(f"\nreal-time pure pursuit via {how}: {result}")
    check_following(result)


def test_the_watchdog_stops_a_vehicle_whose_commands_stop_in_world_time(realtime):
    session = realtime
    session.reset()
    session.spin(0.2)
    held_mark = len(session.graph.messages("/polaris/vehicle/held_command"))  # since the reset (time 0)
    for k in range(40):  # 2 s at 20 Hz
        session.send_ackermann("polaris", 0.05, 3.0)
        if k == 0:
            session.wait_source("polaris", "ackermann")
        session.spin(0.05)
    mark = len(session.graph.messages("/polaris/vehicle/ackermann_state"))
    session.spin(3.0)
    # The watchdog counts from the last command's arrival in world time: the stamp the bridge gave
    # it, which the vehicle's held_command carries (not the wall time this test stopped at).
    held = session.graph.messages("/polaris/vehicle/held_command")
    held = [m for m in held[held_mark:] if m.frame_id == "ackermann"]
    last_command = max(_sec(m.stamp) for m in held)
    states = session.graph.messages("/polaris/vehicle/ackermann_state")[mark:]
    t = np.array([_sec(m.header.stamp) for m in states]) - last_command
    v = np.array([m.drive.speed for m in states])
    braking_from = float(t[(t > 0) & (np.diff(v, prepend=v[0]) < -0.02)].min())
    stopped_at = float(t[(t > 0) & (np.abs(v) < 1e-3)].min())
    print(f"\nwatchdog: commands stopped, braking from +{braking_from:.3f} s, stopped at +{stopped_at:.3f} s "
          "(world time after the last command's arrival)")
    # 0.5 s of world time, then the report it fired at and the brake command's way to the game
    assert 0.5 - 1e-6 <= braking_from <= 0.65
    assert stopped_at < braking_from + 1.0
    steer = states[-1].drive.steering_angle
    assert steer == pytest.approx(0.05, abs=2e-3)  # steering held
    session.release("polaris")


def test_bad_commands_are_refused_beyond_the_limits_saturated_and_the_vehicle_goes_on(realtime):
    from diagnostic_msgs.msg import DiagnosticArray

    session = realtime
    diagnostics = session.graph.subscribe(DiagnosticArray, "/diagnostics")
    session.reset()
    session.spin(0.2)
    # NaN, inf, beyond the limits (one command: a WARN per input every 2 s at most), and one within them
    bad = [(float("nan"), 2.0), (0.0, float("inf")), (2.0, 50.0), (0.0, 2.0)]
    for k in range(40):
        session.send_ackermann("polaris", 0.0, 2.0)
        if k == 0:
            session.wait_source("polaris", "ackermann")
        if k % 10 == 5:
            steer, speed = bad[k // 10]
            session.send_ackermann("polaris", steer, speed)
        session.spin(0.05)
    if dbw is not None:
        session.enable["polaris"].publish(Empty())
        session.steering["polaris"].publish(dbw.SteeringCmd(cmd=1.0, cmd_type=99, enable=True))
        session.steering["polaris"].publish(dbw.SteeringCmd(cmd=1.0, cmd_type=dbw.SteeringCmd.CMD_TORQUE,
                                                            enable=True))
        session.throttle["polaris"].publish(dbw.ThrottleCmd(cmd=150.0, cmd_type=dbw.ThrottleCmd.CMD_PERCENT,
                                                            enable=True))
        session.spin(0.3)
    session.release("polaris")
    session.spin(0.3)
    states = session.graph.messages("/polaris/vehicle/ackermann_state")
    speeds = [m.drive.speed for m in states[-120:]]
    assert all(math.isfinite(v) and -0.01 < v < 2.6 for v in speeds)
    log = next(p for p in session.processes if "vehicle_bridge /polaris" in p.name).output()
    # one line per field every 2 s at most: each of the four shows
    assert "vehicle/ackermann_cmd refused: steering_angle is nan" in log
    assert "vehicle/ackermann_cmd refused: speed is inf" in log
    assert "vehicle/ackermann_cmd beyond the vehicle's limits" in log
    assert "steering_angle 2 rad applied as 0.593412 rad" in log
    assert "speed 50 m/s applied as 11 m/s" in log
    if dbw is not None:
        assert "steering cmd_type 99 is not a SteeringCmd constant" in log
        assert "SteeringCmd CMD_TORQUE is not served" in log
        assert "throttle cmd 150 % applied as 100 %" in log
    session.spin(1.5)  # /diagnostics at 1 Hz counts them
    counts = {}
    for _t, array in diagnostics:
        for status in array.status:
            if status.name == "vehicle_bridge: polaris":
                counts = {v.key: int(v.value) for v in status.values}
    assert counts.get("saturated: vehicle/ackermann_cmd steering_angle", 0) >= 1, counts
    assert counts.get("saturated: vehicle/ackermann_cmd speed", 0) >= 1, counts
    assert counts.get("refused: vehicle/ackermann_cmd steering_angle not finite", 0) >= 1, counts


def test_a_driven_vehicles_lidar_lands_on_the_terrain(realtime):
    """A sweep of a vehicle driving a curve: each column put through the mount and the ground
    truth pose at its firing time (the points are in the sensor frame of that instant) lands on
    the rolling terrain."""
    from support.reference_geometry import quat_matrix
    from acres_sim.fake_game.world.scene import default_scene
    from acres_sim.stream.timing import column_firing_offsets
    session = realtime
    session.reset()
    session.spin(0.2)
    # After a reset the stamps repeat those of earlier tests: only what comes from here on counts.
    truth_mark = len(session.graph.received["/polaris/ground_truth/odom"])
    for k in range(80):  # a curve at 3 m/s, 4 s
        session.send_ackermann("polaris", 0.25, 3.0)
        if k == 0:
            session.wait_source("polaris", "ackermann")
        session.spin(0.05)
    cloud = session.graph.messages("/polaris/lidar/points")[-1]
    session.release("polaris")
    stamp = _sec(cloud.header.stamp)
    truths = session.graph.messages("/polaris/ground_truth/odom")[truth_mark:]
    t_truth = np.array([_sec(m.header.stamp) for m in truths])
    columns, rings = cloud.height, cloud.width
    times = stamp + column_firing_offsets(columns, 10.0)
    assert t_truth.min() <= times[0] and times[-1] <= t_truth.max()
    speed = np.interp(stamp, t_truth, [m.twist.twist.linear.x for m in truths])
    positions = np.stack([np.interp(times, t_truth, [getattr(m.pose.pose.position, a) for m in truths])
                          for a in "xyz"], axis=1)
    quats = np.stack([np.interp(times, t_truth, [getattr(m.pose.pose.orientation, a) for m in truths])
                      for a in "xyzw"], axis=1)
    quats /= np.linalg.norm(quats, axis=1, keepdims=True)  # nlerp between 10 ms samples
    statics = {t.child_frame_id: t for m in session.graph.messages("/tf_static") for t in m.transforms}
    mount = statics[cloud.header.frame_id].transform
    r_mount = quat_matrix((mount.rotation.x, mount.rotation.y, mount.rotation.z, mount.rotation.w))
    t_mount = np.array([mount.translation.x, mount.translation.y, mount.translation.z])
    points = np.frombuffer(bytes(cloud.data), "<f4").reshape(columns, rings, 4)[:, :, :3].astype(float)
    in_body = points @ r_mount.T + t_mount
    world = np.concatenate([in_body[c] @ quat_matrix(tuple(quats[c])).T + positions[c]
                            for c in range(columns)])
    world = world[np.isfinite(world).all(axis=1)]
    centre = positions[-1]
    near = world[np.hypot(world[:, 0] - centre[0], world[:, 1] - centre[1]) < 8.0]
    terrain = default_scene().terrain
    ground = np.array([terrain.at(x, y)[0] for x, y in near[:, :2]])
    lowest = near[:, 2] - ground
    print(f"\nLiDAR of a vehicle at {speed:.2f} m/s: {near.shape[0]} points within 8 m, ground returns "
          f"{np.median(np.abs(lowest[lowest < 0.3])) * 1e3:.1f} mm from the terrain (median)")
    assert speed > 2.0 and near.shape[0] > 100
    assert np.median(np.abs(lowest[lowest < 0.3])) < 0.05  # the ground returns lie on the terrain
