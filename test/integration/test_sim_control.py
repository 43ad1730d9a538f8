"""sim_control end to end: fake_game in lockstep serving two agents, one sim_bridge per agent,
sim_control, and this test's rclpy graph calling the simulation_interfaces services and action
with a reliable subscriber on every data topic. ROS_DOMAIN_ID 120..122."""

from __future__ import annotations

import math
import sys
import time

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="the sim_control tests need rclpy")
simulation_interfaces = pytest.importorskip(
    "simulation_interfaces", reason="simulation_interfaces is not installed (rosdep key of the same name)")

from support.bridge import (  # noqa: E402
    Graph,
    Process,
    call_service,
    free_ports,
    ros_env,
    start_bridge,
    start_fake_game,
)
from support.reference_geometry import quat_matrix  # noqa: E402
from action_msgs.msg import GoalStatus  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.action import ActionClient  # noqa: E402
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy  # noqa: E402
from rosgraph_msgs.msg import Clock  # noqa: E402
from sensor_msgs.msg import CameraInfo, Image, Imu, NavSatFix, PointCloud2  # noqa: E402
from simulation_interfaces import srv  # noqa: E402
from simulation_interfaces.action import SimulateSteps  # noqa: E402
from simulation_interfaces.msg import Result, SimulationState, SimulatorFeatures  # noqa: E402
from tf2_msgs.msg import TFMessage  # noqa: E402

from acres_sim.rotations import rpy_deg_to_quaternion  # noqa: E402

AGENTS = ("polaris", "maxxum")
CALL_TIMEOUT_S = 60.0
TF_STATIC_QOS = QoSProfile(depth=10, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                           reliability=ReliabilityPolicy.RELIABLE)
CLOCK_QOS = QoSProfile(depth=1000, reliability=ReliabilityPolicy.BEST_EFFORT)  # /clock is best effort
# Every data topic of the two agents (reliable subscribers, the default QoS of the graph).
TOPICS = {
    "/tf": TFMessage,
    **{f"/{a}/{t}": k for a in AGENTS for t, k in (
        ("lidar/points", PointCloud2), ("ins/fix", NavSatFix), ("ins/imu", Imu), ("ins/odom", Odometry),
        ("ins/odom_utm", Odometry), ("ground_truth/odom", Odometry))},
    "/polaris/camera/image_raw": Image,
    "/polaris/camera/camera_info": CameraInfo,
}


def _sec(stamp) -> float:
    return stamp.sec + stamp.nanosec * 1e-9


class ControlSession:
    """fake_game (lockstep, control channel) + two bridges + sim_control + the test's graph."""

    def __init__(self, domain_id: int, sim_control_agents: tuple[str, ...] = AGENTS):
        self.domain_id = domain_id
        *self.ports, self.control_port = free_ports(len(AGENTS) + 1)
        self.game = self.start_game()
        self.bridges: list[Process] = []
        self.graph: Graph | None = None
        self.sim_control: Process | None = None
        try:
            for index, (agent, port) in enumerate(zip(AGENTS, self.ports)):
                self.bridges.append(start_bridge(port, domain_id, [
                    f"frame_prefix:={agent}/", f"publish_clock:={'true' if index == 0 else 'false'}"],
                    namespace=f"/{agent}"))
            self.sim_control = Process(
                [sys.executable, "-m", "acres_sim.nodes.sim_control", "--ros-args",
                 "-p", f"control_port:={self.control_port}",
                 "-p", f"agents:=[{','.join(sim_control_agents)}]", "-p", "barrier_timeout_s:=3.0"],
                ros_env(domain_id), "sim_control")
            self.graph = g = Graph(domain_id)
            for topic, kind in TOPICS.items():
                g.subscribe(kind, topic)
            g.subscribe(Clock, "/clock", CLOCK_QOS)
            g.subscribe(TFMessage, "/tf_static", TF_STATIC_QOS)
            self.clients = {name: g.node.create_client(kind, f"/{name}") for name, kind in (
                ("get_simulator_features", srv.GetSimulatorFeatures),
                ("get_simulation_state", srv.GetSimulationState),
                ("set_simulation_state", srv.SetSimulationState),
                ("step_simulation", srv.StepSimulation),
                ("reset_simulation", srv.ResetSimulation),
                ("get_entities", srv.GetEntities),
                ("get_entity_state", srv.GetEntityState),
                ("set_entity_state", srv.SetEntityState),
                ("spawn_entity", srv.SpawnEntity),
                ("delete_entity", srv.DeleteEntity))}
            self.action = ActionClient(g.node, SimulateSteps, "/simulate_steps")
            g.spin_until(lambda: all(c.service_is_ready() for c in self.clients.values())
                         and self.action.server_is_ready(), 60, "sim_control's services")
            # The data publishers exist from each bridge's Hello; the barriers from its start.
            g.wait_matched([*TOPICS, "/clock"], 60)
        except BaseException:
            self.close()
            raise

    def start_game(self) -> Process:
        game = start_fake_game(["--ports", ",".join(map(str, self.ports)), "--vehicles", ",".join(AGENTS),
                                "--lockstep", "--control-port", str(self.control_port),
                                "--realtime-factor", "0"], self.domain_id)
        game.wait_for(f"ACRES_SIM_CONTROL_LISTENING port={self.control_port}", 60)
        return game

    def call(self, name: str, **fields):
        return call_service(self.graph, self.clients[name], CALL_TIMEOUT_S, **fields)

    def drain(self) -> None:
        """Take what the subscriptions already hold, without waiting for anything new: data
        delivered before an answer is in the readers' caches when the answer arrives."""
        g = self.graph
        for topic, sub in g.subscriptions.items():
            while (taken := sub.handle.take_message(sub.msg_type, sub.raw)) is not None:
                g.received[topic].append((time.monotonic(), taken[0]))

    def counts(self) -> dict[str, int]:
        return {t: len(self.graph.received[t]) for t in TOPICS}

    def pause(self) -> None:
        answer = self.call("set_simulation_state", state=SimulationState(state=SimulationState.STATE_PAUSED))
        already = srv.SetSimulationState.Response.ALREADY_IN_TARGET_STATE
        assert answer.result.result in (Result.RESULT_OK, already)

    def step(self, steps: int) -> None:
        answer = self.call("step_simulation", steps=steps)
        assert answer.result.result == Result.RESULT_OK, answer.result.error_message
        self.drain()

    def state(self, agent: str):
        answer = self.call("get_entity_state", entity=agent)
        assert answer.result.result == Result.RESULT_OK, answer.result.error_message
        return answer.state

    def close(self) -> list[int | None]:
        codes = []
        if self.sim_control is not None:
            codes.append(self.sim_control.stop())
        codes += [b.stop() for b in self.bridges]
        if self.graph is not None:
            self.graph.close()
        self.game.stop()
        return codes


@pytest.fixture(scope="module")
def session():
    s = ControlSession(120)
    yield s
    assert s.close() == [0, 0, 0]


def test_features_are_what_works(session):
    features = set(session.call("get_simulator_features").features.features)
    F = SimulatorFeatures
    assert features == {F.SPAWNING, F.DELETING, F.SPAWNABLES, F.SIMULATION_RESET_SPAWNED,
                        F.ENTITY_STATE_GETTING, F.ENTITY_STATE_SETTING, F.SIMULATION_RESET,
                        F.SIMULATION_RESET_TIME, F.SIMULATION_RESET_STATE, F.SIMULATION_STATE_GETTING,
                        F.SIMULATION_STATE_SETTING, F.SIMULATION_STATE_PAUSE, F.STEP_SIMULATION_SINGLE,
                        F.STEP_SIMULATION_MULTIPLE, F.STEP_SIMULATION_ACTION}
    answer = session.call("spawn_entity")  # no uri: a spawnable it does not have, said so
    assert answer.result.result == srv.SpawnEntity.Response.NO_RESOURCE
    assert "round_bale" in answer.result.error_message
    answer = session.call("delete_entity", entity="nothing")
    assert answer.result.result == Result.RESULT_NOT_FOUND and answer.result.error_message


def test_steps_are_exact_and_answer_after_every_message_of_the_step(session):
    session.pause()
    session.call("reset_simulation", scope=srv.ResetSimulation.Request.SCOPE_ALL)
    session.step(1)  # 1 means 1: one clock, and the INS epoch due at 1/120 s
    session.graph.spin_for(0.5)
    base = session.counts()
    for k in range(1, 4):
        session.step(12)
        counts = session.counts()
        delta = {t: counts[t] - base[t] for t in TOPICS}
        # From step 1 to 1 + 12k: INS epochs due 0.01 .. 0.1k -> 10k; one cloud (and image) per 12 steps.
        for agent in AGENTS:
            assert delta[f"/{agent}/ins/odom"] == 10 * k, (agent, delta)
            assert delta[f"/{agent}/ground_truth/odom"] == 10 * k, (agent, delta)
            assert delta[f"/{agent}/lidar/points"] == k, (agent, delta)
        assert delta["/polaris/camera/image_raw"] == k and delta["/polaris/camera/camera_info"] == k
        # the last data of the step are there: the odometry of its last INS epoch
        last = session.graph.messages("/polaris/ins/odom")[-1]
        assert _sec(last.header.stamp) == pytest.approx(0.1 * k, abs=1e-9)  # epoch 10k, due at 0.1k
        assert _sec(session.state("polaris").header.stamp) == pytest.approx((1 + 12 * k) / 120, abs=1e-9)
    session.graph.spin_for(0.3)  # /clock is best effort, not covered by the barrier: it comes too
    assert _sec(session.graph.messages("/clock")[-1].clock) == pytest.approx(37 / 120, abs=1e-9)


def test_simulation_state_transitions(session):
    session.pause()
    S, R = SimulationState, srv.SetSimulationState.Response
    assert session.call("get_simulation_state").state.state == S.STATE_PAUSED
    again = session.call("set_simulation_state", state=S(state=S.STATE_PAUSED))
    assert again.result.result == R.ALREADY_IN_TARGET_STATE and again.result.error_message
    for impossible in (S.STATE_STOPPED, S.STATE_QUITTING, S.STATE_NO_WORLD, 77):
        answer = session.call("set_simulation_state", state=S(state=impossible))
        assert answer.result.result == R.INCORRECT_TRANSITION and answer.result.error_message
    playing = session.call("set_simulation_state", state=S(state=S.STATE_PLAYING))
    assert playing.result.result == Result.RESULT_OK
    assert session.call("get_simulation_state").state.state == S.STATE_PLAYING
    before = session.state("maxxum").header.stamp
    session.graph.spin_for(0.5)
    assert _sec(session.state("maxxum").header.stamp) > _sec(before)  # the world runs
    refused = session.call("step_simulation", steps=12)
    assert refused.result.result == Result.RESULT_OPERATION_FAILED
    assert "paused" in refused.result.error_message
    session.pause()
    assert session.call("get_simulation_state").state.state == S.STATE_PAUSED
    frozen = _sec(session.state("maxxum").header.stamp)
    session.graph.spin_for(0.3)
    assert _sec(session.state("maxxum").header.stamp) == frozen


def test_simulate_steps_action_gives_feedback_and_can_be_cancelled(session):
    session.pause()
    start = _sec(session.state("polaris").header.stamp)
    feedback: list[tuple[int, int]] = []
    sent = session.action.send_goal_async(
        SimulateSteps.Goal(steps=36),
        feedback_callback=lambda f: feedback.append((f.feedback.completed_steps, f.feedback.remaining_steps)))
    session.graph.spin_until(sent.done, CALL_TIMEOUT_S, "goal accepted")
    result = sent.result().get_result_async()
    session.graph.spin_until(result.done, CALL_TIMEOUT_S, "action result")
    assert result.result().result.result.result == Result.RESULT_OK
    # the feedback topic and the result service are apart: the last feedback may come after the result
    session.graph.spin_until(lambda: len(feedback) >= 3, CALL_TIMEOUT_S, "the last step's feedback")
    session.graph.spin_for(0.2)
    assert feedback == [(12, 24), (24, 12), (36, 0)]  # once per LiDAR period
    assert _sec(session.state("polaris").header.stamp) == pytest.approx(start + 36 / 120, abs=1e-9)

    feedback.clear()
    sent = session.action.send_goal_async(
        SimulateSteps.Goal(steps=12000),
        feedback_callback=lambda f: feedback.append(f.feedback.completed_steps))
    session.graph.spin_until(sent.done, CALL_TIMEOUT_S, "goal accepted")
    handle = sent.result()
    session.graph.spin_until(lambda: len(feedback) >= 2, CALL_TIMEOUT_S, "feedback")
    cancel = handle.cancel_goal_async()
    session.graph.spin_until(cancel.done, CALL_TIMEOUT_S, "cancel answer")
    result = handle.get_result_async()
    session.graph.spin_until(result.done, CALL_TIMEOUT_S, "result after cancel")
    answer = result.result()
    assert answer.status == GoalStatus.STATUS_CANCELED
    assert answer.result.result.result == Result.RESULT_OPERATION_FAILED
    done = int(answer.result.result.error_message.split("after ")[1].split(" of")[0])
    assert 24 <= done < 12000 and done % 12 == 0
    now = _sec(session.state("polaris").header.stamp)
    assert now == pytest.approx(start + (36 + done) / 120, abs=1e-9)  # stopped between chunks


def test_time_reset_takes_the_clock_back_and_consumers_go_on(session):
    session.pause()
    session.step(24)
    before = session.state("polaris")
    assert _sec(before.header.stamp) > 0.15
    # an rclpy node on sim time, with a timer, in the test's graph
    sim_node = rclpy.create_node("sim_time_user", context=session.graph.context,
                                 parameter_overrides=[rclpy.parameter.Parameter("use_sim_time", value=True)])
    ticks: list[float] = []
    sim_node.create_timer(0.05, lambda: ticks.append(sim_node.get_clock().now().nanoseconds * 1e-9))
    session.graph.executor.add_node(sim_node)
    try:
        session.step(12)
        session.graph.spin_for(0.3)
        t_before = sim_node.get_clock().now().nanoseconds * 1e-9
        assert t_before == pytest.approx(_sec(before.header.stamp) + 0.1, abs=1e-6)
        answer = session.call("reset_simulation", scope=srv.ResetSimulation.Request.SCOPE_TIME)
        assert answer.result.result == Result.RESULT_OK, answer.result.error_message
        after = session.state("polaris")
        assert _sec(after.header.stamp) == 0.0
        # TIME only: the vehicle goes on from where it was
        moved = session.state("polaris")
        assert (moved.pose.position.x, moved.pose.position.y) == pytest.approx(
            (after.pose.position.x, after.pose.position.y))
        mark = {t: len(session.graph.received[t]) for t in TOPICS}
        clock_mark = len(session.graph.received["/clock"])
        ticks.clear()
        for _ in range(3):
            session.step(12)
        session.graph.spin_for(0.5)
        odom = [m for _, m in session.graph.received["/polaris/ins/odom"][mark["/polaris/ins/odom"]:]]
        clouds = [m for _, m in session.graph.received["/maxxum/lidar/points"][mark["/maxxum/lidar/points"]:]]
        clocks = session.graph.messages("/clock")[clock_mark:]
        # the earlier stamps are published, not refused and not held back
        # INS epoch 1 comes at step 2
        assert len(odom) == 30 and _sec(odom[0].header.stamp) == pytest.approx(2 / 120, abs=1e-9)
        assert [round(_sec(c.header.stamp), 6) for c in clouds] == [0.1, 0.2, 0.3]
        assert _sec(clocks[0].clock) == pytest.approx(1 / 120, abs=1e-9)
        assert _sec(clocks[-1].clock) == pytest.approx(0.3, abs=1e-9)
        # the sim-time node follows the jump back, and its timer keeps firing
        assert sim_node.get_clock().now().nanoseconds * 1e-9 == pytest.approx(0.3, abs=1e-6)
        assert ticks and max(ticks) <= 0.3 + 1e-6
    finally:
        session.graph.executor.remove_node(sim_node)
        sim_node.destroy_node()


def test_a_tf2_buffer_goes_on_after_a_time_reset(session):
    tf2_ros = pytest.importorskip("tf2_ros", reason="tf2_ros is not installed (no wheel; comes with ROS 2)")
    node = rclpy.create_node("tf_user", context=session.graph.context,
                             parameter_overrides=[rclpy.parameter.Parameter("use_sim_time", value=True)])
    buffer = tf2_ros.Buffer(node=node)
    listener = tf2_ros.TransformListener(buffer, node, spin_thread=False)
    session.graph.executor.add_node(node)
    try:
        session.pause()
        session.step(24)
        session.graph.spin_for(0.5)
        latest = buffer.lookup_transform("map", "polaris/base_footprint", rclpy.time.Time())
        assert _sec(latest.header.stamp) > 0.1
        session.call("reset_simulation", scope=srv.ResetSimulation.Request.SCOPE_TIME)
        session.step(12)
        session.graph.spin_for(0.5)
        # after the jump back the buffer holds the new, earlier transforms and answers for them
        at = rclpy.time.Time(seconds=0.1, clock_type=rclpy.clock.ClockType.ROS_TIME)
        again = buffer.lookup_transform("map", "polaris/base_footprint", at)
        assert _sec(again.header.stamp) == pytest.approx(0.1, abs=1e-9)
        lidar = buffer.lookup_transform("map", "polaris/lidar", at)
        assert lidar.header.frame_id == "map"
    finally:
        del listener
        session.graph.executor.remove_node(node)
        node.destroy_node()


def test_state_reset_and_teleport(session):
    session.pause()
    session.call("reset_simulation", scope=srv.ResetSimulation.Request.SCOPE_ALL)
    start = session.state("polaris").pose.position
    session.step(48)
    driven = session.state("polaris").pose.position
    assert math.hypot(driven.x - start.x, driven.y - start.y) > 0.5
    answer = session.call("reset_simulation", scope=srv.ResetSimulation.Request.SCOPE_STATE)
    assert answer.result.result == Result.RESULT_OK
    back = session.state("polaris")
    assert (back.pose.position.x, back.pose.position.y, back.pose.position.z) == pytest.approx(
        (start.x, start.y, start.z), abs=1e-9)
    assert _sec(back.header.stamp) == pytest.approx(48 / 120, abs=1e-9)  # STATE only: the clock goes on

    # teleport: 30 m north of the loop's middle, facing west
    request_state = session.clients["set_entity_state"].srv_type.Request().state
    request_state.header.frame_id = "map"
    position = request_state.pose.position
    position.x, position.y, position.z = 5.0, 60.0, 0.0
    qx, qy, qz, qw = rpy_deg_to_quaternion((0.0, 0.0, 180.0))
    o = request_state.pose.orientation
    o.x, o.y, o.z, o.w = qx, qy, qz, qw
    answer = session.call("set_entity_state", entity="polaris", state=request_state)
    assert answer.result.result == Result.RESULT_OK, answer.result.error_message
    mark = len(session.graph.received["/polaris/lidar/points"])
    truth_mark = len(session.graph.received["/polaris/ground_truth/odom"])
    session.step(12)
    session.step(12)
    held = session.state("polaris")
    assert (held.pose.position.x, held.pose.position.y) == pytest.approx((5.0, 60.0))
    assert held.twist.linear.x == pytest.approx(0.0, abs=1e-6)
    truths = session.graph.messages("/polaris/ground_truth/odom")[truth_mark:]
    assert truths and all((m.pose.pose.position.x, m.pose.pose.position.y) == pytest.approx((5.0, 60.0))
                          for m in truths)
    # the next cloud, through the TF tree (map -> base_footprint -> lidar), lands on the terrain there
    cloud = session.graph.messages("/polaris/lidar/points")[mark + 1]
    statics = {t.child_frame_id: t for m in session.graph.messages("/tf_static") for t in m.transforms}
    mount = statics[cloud.header.frame_id].transform
    r_mount = quat_matrix((mount.rotation.x, mount.rotation.y, mount.rotation.z, mount.rotation.w))
    t_mount = np.array([mount.translation.x, mount.translation.y, mount.translation.z])
    r_body = quat_matrix((qx, qy, qz, qw))
    points = np.frombuffer(bytes(cloud.data), "<f4").reshape(-1, 4)[:, :3].astype(float)
    points = points[np.isfinite(points).all(axis=1)]
    world = (points @ r_mount.T + t_mount) @ r_body.T + np.array([5.0, 60.0, 0.0])
    near = world[np.hypot(world[:, 0] - 5.0, world[:, 1] - 60.0) < 8.0]
    from acres_sim.fake_game.world.scene import default_scene
    terrain = default_scene().terrain
    ground = np.array([terrain.at(x, y)[0] for x, y in near[:, :2]])
    lowest = near[:, 2] - ground
    assert near.shape[0] > 100
    assert np.median(np.abs(lowest[lowest < 0.3])) < 0.05  # the ground returns lie on the terrain
    # a STATE reset ends the hold
    session.call("reset_simulation", scope=srv.ResetSimulation.Request.SCOPE_STATE)
    again = session.state("polaris").pose.position
    assert (again.x, again.y) == pytest.approx((start.x, start.y), abs=1e-9)


def test_entities_and_error_answers_leave_the_node_serving(session):
    E = srv.GetEntities.Request
    assert list(session.call("get_entities").entities) == list(AGENTS)
    filters = E().filters
    filters.filter = "^pol"
    assert list(session.call("get_entities", filters=filters).entities) == ["polaris"]
    filters.filter = "(unclosed"
    assert session.call("get_entities", filters=filters).result.result == Result.RESULT_OPERATION_FAILED
    filters = E().filters
    filters.tags.tags = ["tractor"]
    assert session.call("get_entities", filters=filters).result.result == Result.RESULT_FEATURE_UNSUPPORTED
    missing = session.call("get_entity_state", entity="nobody")
    assert missing.result.result == Result.RESULT_NOT_FOUND and "nobody" in missing.result.error_message
    bad = session.clients["set_entity_state"].srv_type.Request().state
    bad.pose.orientation.w = 0.0  # the zero quaternion
    answer = session.call("set_entity_state", entity="maxxum", state=bad)
    assert answer.result.result == srv.SetEntityState.Response.INVALID_POSE
    bad.pose.orientation.w = 1.0
    bad.header.frame_id = "utm"
    assert session.call("set_entity_state", entity="maxxum", state=bad).result.result == \
        Result.RESULT_OPERATION_FAILED
    # scope 8 is no scope of ResetSimulation
    assert session.call("reset_simulation", scope=8).result.result == Result.RESULT_FEATURE_UNSUPPORTED
    assert session.call("step_simulation", steps=0).result.result == Result.RESULT_OPERATION_FAILED
    session.pause()
    session.step(12)  # and it still steps


def test_missing_barrier_and_game_going_away():
    s = ControlSession(121, sim_control_agents=(*AGENTS, "ghost"))
    try:
        answer = s.call("step_simulation", steps=12)
        assert answer.result.result == Result.RESULT_OPERATION_FAILED
        message = answer.result.error_message
        assert "ghost" in message and "polaris" not in message and "maxxum" not in message
        s.game.stop()
        gone = s.call("get_simulation_state")
        assert gone.result.result == Result.RESULT_OPERATION_FAILED
        assert "not reachable" in gone.result.error_message
        assert s.call("step_simulation", steps=12).result.result == Result.RESULT_OPERATION_FAILED
        marks = [len(b.lines) for b in s.bridges]
        s.game = s.start_game()  # the game comes back on the same ports
        s.graph.spin_until(lambda: s.call("get_simulation_state").result.result == Result.RESULT_OK, 30,
                           "sim_control reaching the game again")
        assert s.call("get_simulation_state").state.state == SimulationState.STATE_PAUSED
        for bridge, mark in zip(s.bridges, marks):  # the bridges reconnected
            bridge.wait_line(lambda line: "sensor stream connected" in line, 30, mark)
    finally:
        s.close()
