"""The vehicles drawn (ROS_DOMAIN_ID 133): a two-agent lockstep session (fake_game, a sim_bridge, a
vehicle_bridge and a vehicle_description per agent, sim_control) in which this process, built against
the released interfaces, drives the Polaris in a turn and into a bale: robot_description parses with
an independent URDF library and has the vehicle's AgentInfo dimensions; the steering joints are the
Ackermann angles of vehicle/ackermann_state's road-wheel angle and the wheels turn at speed / radius;
the bale's marker stands where /sim/objects says and the contact gets one; and the episode log, read
back with rosbags, holds all of them with /tf and /tf_static. Figures print with pytest -s."""

from __future__ import annotations

import io
import math
import sys

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="the description tests need rclpy")
pytest.importorskip("simulation_interfaces", reason="simulation_interfaces is not installed")
pytest.importorskip("ackermann_msgs", reason="ackermann_msgs is not installed")
pytest.importorskip("visualization_msgs", reason="visualization_msgs is not installed")
pytest.importorskip("acres_interfaces.msg",
                    reason="acres_interfaces is not built (interfaces/acres_interfaces; see the README)")
yourdfpy = pytest.importorskip("yourdfpy", reason="yourdfpy (an independent URDF reader) is not installed")
pytest.importorskip("rosbags", reason="rosbags is not installed (test_depend python3-rosbags-pip)")

from acres_interfaces import srv as acres_srv  # noqa: E402
from acres_interfaces.msg import Agents, WorldObjects  # noqa: E402
from geometry_msgs.msg import Pose, PoseStamped  # noqa: E402
from rosbags.highlevel import AnyReader  # noqa: E402
from rosbags.typesys import Stores, get_typestore  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from simulation_interfaces import srv  # noqa: E402
from simulation_interfaces.msg import EntityState, Result  # noqa: E402
from std_msgs.msg import String  # noqa: E402
from support.bridge import call_service  # noqa: E402
from support.driving import AGENTS, DEEP, LATCHED, CONTROL_STEPS, DriveSession  # noqa: E402
from visualization_msgs.msg import Marker, MarkerArray  # noqa: E402

from acres_sim.description.wheel_joints import ackermann_angles  # noqa: E402
from harness.processes import Proc, ros_env  # noqa: E402

DOMAIN = 133
SPOT = (-10.0, -28.0)  # the loop's south straight, facing east (flat ground in lockstep)


@pytest.fixture(scope="module")
def session():
    s = DriveSession(DOMAIN, lockstep=True)
    try:
        for agent in AGENTS:
            s.processes.append(Proc(
                [sys.executable, "-m", "acres_sim.nodes.vehicle_description", "--ros-args",
                 "-p", f"frame_prefix:={agent}/", "-p", f"vehicle:={agent}", "-r", f"__ns:=/{agent}"],
                ros_env(DOMAIN), f"vehicle_description /{agent}"))
        g = s.graph
        for agent in AGENTS:
            g.subscribe(String, f"/{agent}/robot_description", LATCHED)
            g.subscribe(JointState, f"/{agent}/joint_states", DEEP)
        g.subscribe(MarkerArray, "/sim/markers", LATCHED)
        g.subscribe(WorldObjects, "/sim/objects", LATCHED)
        g.subscribe(Agents, "/sim/agents", LATCHED)
        g.wait_matched(["/polaris/robot_description", "/polaris/joint_states", "/maxxum/joint_states",
                        "/sim/markers"], 60)
        node = g.node
        s.world = {name: node.create_client(kind, f"/{name}") for name, kind in (
            ("spawn_entity", srv.SpawnEntity), ("set_entity_state", srv.SetEntityState),
            ("start_recording", acres_srv.StartRecording), ("stop_recording", acres_srv.StopRecording))}
        g.spin_until(lambda: all(c.service_is_ready() for c in s.world.values()), 60, "services")
    except BaseException:
        s.close()
        raise
    yield s
    assert s.close() == [0] * len(s.processes), s.logs()[-3000:]


def _call(s: DriveSession, service: str, **fields):
    return call_service(s.graph, s.world[service], 60.0, **fields)


def _pose(x: float, y: float, yaw: float = 0.0) -> Pose:
    pose = Pose()
    pose.position.x, pose.position.y = x, y
    pose.orientation.z, pose.orientation.w = math.sin(yaw / 2), math.cos(yaw / 2)
    return pose


def _sec(stamp) -> float:
    return stamp.sec + stamp.nanosec * 1e-9


def _place(s: DriveSession, entity: str, x: float, y: float, yaw: float = 0.0) -> None:
    state = EntityState()
    state.header.frame_id = "map"
    state.pose = _pose(x, y, yaw)
    answer = _call(s, "set_entity_state", entity=entity, state=state)
    assert answer.result.result == Result.RESULT_OK, answer.result.error_message


def _drive(s: DriveSession, steer: float, speed: float, periods: int) -> None:
    for _ in range(periods):
        s.send_ackermann("polaris", steer, speed)
        s.step(CONTROL_STEPS)


def _caught_up(s: DriveSession) -> None:
    """Until the joint states of the last vehicle report are in (the node is not part of the step's
    barriers)."""
    last = s.graph.messages("/polaris/vehicle/ackermann_state")[-1].header.stamp
    s.graph.spin_until(lambda: any(m.header.stamp == last for m in s.graph.messages("/polaris/joint_states")),
                       20, "the joint states of the last report")


def test_a_driven_polaris_and_a_bale_are_drawn_live_and_in_the_log(session, tmp_path):
    s = session
    g = s.graph
    info = next(a for a in g.messages("/sim/agents")[-1].agents if a.name == "polaris")
    # -- the description: an independent URDF reader finds the AgentInfo's dimensions
    g.spin_until(lambda: g.messages("/polaris/robot_description"), 30, "robot_description")
    live_urdf = g.messages("/polaris/robot_description")[-1].data
    robot = yourdfpy.URDF.load(io.StringIO(live_urdf))
    assert robot.base_link == "polaris/base_link"
    assert all(name.startswith("polaris/") and not name.startswith("polaris/polaris/")
               for name in [*robot.link_map, *robot.joint_map])
    assert "polaris/base_footprint" not in robot.link_map and "polaris/lidar" not in robot.link_map
    o = info.body_origin_flu_m
    wheel_at = {}
    for wheel in ("front_left", "front_right", "rear_left", "rear_right"):
        chain = robot.get_transform(f"polaris/{wheel}_wheel_link", "polaris/base_link")[:3, 3]
        wheel_at[wheel] = chain + (o.x, o.y, o.z)  # in base_footprint
        link = robot.link_map[f"polaris/{wheel}_wheel_link"]
        assert link.visuals[0].geometry.cylinder.radius == pytest.approx(info.wheel_radius_m)
        assert robot.joint_map[f"polaris/{wheel}_wheel_joint"].type == "continuous"
    assert wheel_at["front_left"] - wheel_at["rear_left"] == pytest.approx((info.wheelbase_m, 0.0, 0.0))
    assert wheel_at["rear_left"] - wheel_at["rear_right"] == pytest.approx((0.0, info.track_m, 0.0))
    assert wheel_at["rear_left"][[0, 2]] == pytest.approx((0.0, info.wheel_radius_m))
    body = robot.link_map["polaris/base_link"].collisions[0]
    assert tuple(body.geometry.box.size) == pytest.approx((info.length_m, info.width_m, info.height_m))
    centre = body.origin[:3, 3] + (o.x, o.y, o.z)
    assert centre == pytest.approx((0.5 * info.length_m - info.rear_overhang_m, 0.0, 0.5 * info.height_m))

    # -- a turn: the steering joints are the Ackermann angles of the actual road-wheel angle
    _place(s, "polaris", *SPOT)
    answer = _call(s, "spawn_entity", name="bale", uri="acres://objects/round_bale",
                   initial_pose=PoseStamped(pose=_pose(SPOT[0] + 2.0, SPOT[1] - 12.0)))
    assert answer.result.result == Result.RESULT_OK, answer.result.error_message
    log = tmp_path / "drawn.mcap"
    assert _call(s, "start_recording", path=str(log)).success
    s.wait_source("polaris", "")  # nothing commanded yet
    describer = next(p for p in s.processes if p.name == "vehicle_description /polaris")
    # the node follows the game's states before the drive: at the first of them it may switch from
    # the reports, and a switch restarts the wheels (they do not advance at that message). Stepped
    # until it does: the states of a step taken before its subscription matched never reach it.
    for _ in range(10):
        s.step(CONTROL_STEPS)
        if g.spin_while_not(lambda: "joint_states follow /sim/agent_states" in describer.output(), 2):
            break
    else:
        pytest.fail("the description did not follow the game's states after 10 steps of 2 s each")
    s.step(CONTROL_STEPS)
    _caught_up(s)
    following_since = _sec(g.messages("/polaris/joint_states")[-1].header.stamp)
    _drive(s, 0.3, 3.0, 25)
    _caught_up(s)
    reports = {_sec(m.header.stamp): m.drive for m in g.messages("/polaris/vehicle/ackermann_state")}
    joints = [m for m in g.messages("/polaris/joint_states") if _sec(m.header.stamp) in reports]
    assert len(joints) >= 25 * CONTROL_STEPS * 0.9, len(joints)
    names = list(joints[0].name)
    wheels = ("front_left", "front_right", "rear_left", "rear_right")
    assert names == ["polaris/front_left_steering_joint", "polaris/front_right_steering_joint",
                     *(f"polaris/{w}_wheel_joint" for w in wheels)]
    steer_err = rate_err = 0.0
    turning = 0
    from acres_sim.fake_game.simulation.vehicles import vehicle_geometry
    geometry = vehicle_geometry("polaris")
    for m in joints:
        drive = reports[_sec(m.header.stamp)]
        left, right = ackermann_angles(geometry, drive.steering_angle)
        steer_err = max(steer_err, abs(m.position[0] - left), abs(m.position[1] - right))
        rear = 0.5 * (m.velocity[4] + m.velocity[5])
        want = drive.speed / info.wheel_radius_m
        rate_err = max(rate_err, abs(rear - want) / max(1.0, abs(want)))  # the report's float32
        turning += drive.steering_angle > 0.1 and m.position[0] > m.position[1] > 0.0  # inner wheel more
    print(f"\n{len(joints)} joint states against the reports: steering within {steer_err:.2e} rad of "
          f"the Ackermann angles, rear wheels' rate within {rate_err:.2e} (relative) of speed / radius; "
          f"{turning} with the inner (left) wheel turned more")
    assert steer_err < 1e-6 and rate_err < 1e-6 and turning > 100
    # the game's states once they came, and never another source after them (a lockstep world keeps
    # every source in step however slow it is); before the first, whatever came first
    follows = [line.split("follow ")[1] for line in describer.output().splitlines()
               if "joint_states follow" in line]
    assert follows[-1] == "/sim/agent_states" and follows.count("/sim/agent_states") == 1, follows
    # the wheels' positions advance by their rate over each step (wrapped to a turn)
    for a, b in zip(joints, joints[1:]):
        if _sec(a.header.stamp) < following_since:
            continue
        dt = _sec(b.header.stamp) - _sec(a.header.stamp)
        for k in range(2, 6):
            advanced = math.remainder(b.position[k] - a.position[k], math.tau)
            assert advanced == pytest.approx(b.velocity[k] * dt, abs=1e-9)

    # -- the bale's marker, then straight into it: a contact marker
    objects = g.messages("/sim/objects")[-1].objects
    bale = next(ob for ob in objects if ob.name == "bale")
    state = s.odom("polaris").pose.pose
    yaw = 2.0 * math.atan2(state.orientation.z, state.orientation.w)
    ahead = (state.position.x + 4.5 * math.cos(yaw), state.position.y + 4.5 * math.sin(yaw))
    _place(s, "bale", *ahead)
    _drive(s, 0.0, 3.0, 20)
    _caught_up(s)
    g.spin_until(lambda: any(mk.ns == "contacts" for mk in g.messages("/sim/markers")[-1].markers), 20,
                 "a contact marker")
    markers = g.messages("/sim/markers")[-1].markers
    moved = next(ob for ob in g.messages("/sim/objects")[-1].objects if ob.name == "bale")
    assert markers[0].action == Marker.DELETEALL
    shape = next(mk for mk in markers if mk.ns == "objects")
    assert shape.type == Marker.CYLINDER and shape.header.frame_id == "map"
    assert (shape.pose.position.x, shape.pose.position.y) == pytest.approx((moved.pose.position.x,
                                                                           moved.pose.position.y), abs=1e-9)
    assert shape.pose.position.z == pytest.approx(moved.pose.position.z + 0.5 * bale.size_m.z)
    assert (shape.scale.x, shape.scale.y, shape.scale.z) == pytest.approx((1.5, 1.5, 1.2))
    hit = next(mk for mk in markers if mk.ns == "contacts")
    assert math.hypot(hit.pose.position.x - moved.pose.position.x,
                      hit.pose.position.y - moved.pose.position.y) == pytest.approx(0.75, abs=1e-3)
    assert hit.lifetime.sec == 3
    assert _call(s, "stop_recording").message_count > 0

    # -- the log, read by rosbags: the description, the joints, the transforms, the markers
    logged: dict[str, list] = {}
    with AnyReader([log], default_typestore=get_typestore(Stores.EMPTY)) as reader:
        for connection, _t, raw in reader.messages():
            if connection.topic in ("/polaris/robot_description", "/polaris/joint_states", "/tf",
                                    "/tf_static", "/sim/markers"):
                logged.setdefault(connection.topic, []).append(reader.deserialize(raw, connection.msgtype))
    assert [m.data for m in logged["/polaris/robot_description"]] == [live_urdf]
    statics = {t.child_frame_id: t for m in logged["/tf_static"] for t in m.transforms}
    assert statics["polaris/base_link"].header.frame_id == "polaris/base_footprint"
    last_tf = {t.child_frame_id: t for t in logged["/tf"][-1].transforms}
    assert {"polaris/base_footprint", "polaris/front_left_wheel_link", "polaris/front_left_steering_link",
            "maxxum/rear_right_wheel_link"} <= set(last_tf)
    assert last_tf["polaris/base_footprint"].header.frame_id == "map"
    assert len(logged["/polaris/joint_states"]) >= 45 * CONTROL_STEPS // 4  # 30 Hz
    logged_markers = logged["/sim/markers"][-1].markers
    assert [mk.ns for mk in logged_markers if mk.ns == "objects"] == ["objects"]
    bale_marker = next(mk for mk in logged_markers if mk.ns == "objects")
    assert (bale_marker.pose.position.x, bale_marker.pose.position.y) == pytest.approx(
        (moved.pose.position.x, moved.pose.position.y), abs=1e-9)
    np.testing.assert_allclose(logged["/polaris/joint_states"][-1].position[:2], [0.0, 0.0], atol=1e-3)
