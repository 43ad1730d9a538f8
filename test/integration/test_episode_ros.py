"""Episodes from ROS 2 over real processes (ROS_DOMAIN_ID 128, 129): a two-agent lockstep session driven
through each agent's vehicle_bridge, recorded through sim_control's services, read back by rosbags
(an independent rosbag2 reader and CDR decoder) with every agent state equal to what
/sim/agent_states delivered and to ground_truth/odom at the same stamps, then replayed with the same
ground truth bit for bit; /sim/episode and /sim/agents latched; the services' errors. Figures print
with pytest -s."""

from __future__ import annotations

import math
import sys
import time

import pytest

rclpy = pytest.importorskip("rclpy", reason="the episode tests need rclpy")
pytest.importorskip("simulation_interfaces", reason="simulation_interfaces is not installed")
pytest.importorskip("ackermann_msgs", reason="ackermann_msgs is not installed")
acres_interfaces = pytest.importorskip(
    "acres_interfaces.msg",
    reason="acres_interfaces is not built (interfaces/acres_interfaces; see the README)")
pytest.importorskip("rosbags", reason="rosbags is not installed (test_depend python3-rosbags-pip)")

from acres_interfaces import srv as episode_srv  # noqa: E402
from acres_interfaces.msg import Agents, AgentStates, Episode  # noqa: E402
from rosbags.highlevel import AnyReader  # noqa: E402
from rosbags.typesys import Stores, get_typestore  # noqa: E402
from support.bridge import call_service  # noqa: E402
from support.driving import AGENTS, DEEP, LATCHED, DriveSession, _sec  # noqa: E402

from acres_sim.episode.log_file import read_episode  # noqa: E402

DOMAIN = 128
REQUESTS = 20  # of 12 steps: 2 s


@pytest.fixture(scope="module")
def session():
    s = DriveSession(DOMAIN, lockstep=True)
    try:
        g = s.graph
        g.subscribe(AgentStates, "/sim/agent_states", DEEP)
        g.subscribe(Episode, "/sim/episode", LATCHED)
        g.subscribe(Agents, "/sim/agents", LATCHED)
        g.wait_matched(["/sim/agent_states", "/sim/episode", "/sim/agents"], 60)
        s.episode_clients = {name: g.node.create_client(kind, f"/{name}") for name, kind in (
            ("start_recording", episode_srv.StartRecording), ("stop_recording", episode_srv.StopRecording),
            ("start_replay", episode_srv.StartReplay), ("stop_replay", episode_srv.StopReplay),
            ("get_episode_status", episode_srv.GetEpisodeStatus))}
        g.spin_until(lambda: all(c.service_is_ready() for c in s.episode_clients.values()), 60, "services")
    except BaseException:
        s.close()
        raise
    yield s
    assert s.close() == [0] * len(s.processes), s.logs()[-3000:]


def _call(s: DriveSession, name: str, **fields):
    return call_service(s.graph, s.episode_clients[name], 60.0, **fields)


def _drive(s: DriveSession) -> None:
    for request in range(REQUESTS):
        now = request * 12 / 120.0
        for index, agent in enumerate(AGENTS):
            s.send_ackermann(agent, steer=0.25 * (-1) ** (request // 5 + index), speed=3.0)
        s.graph.spin_for(0.05)
        s.step(12)
        assert _sec(s.odom("polaris").header.stamp) == pytest.approx(now + 0.1, abs=1e-9)


def _odom_by_stamp(s: DriveSession, agent: str, since: float) -> dict[int, object]:
    return {m.header.stamp.sec * 10**9 + m.header.stamp.nanosec: m
            for t, m in s.graph.received[f"/{agent}/ground_truth/odom"] if t >= since}


def test_record_read_back_and_replay_an_episode_driven_from_ros(session, tmp_path):
    s = session
    episode = s.graph.messages("/sim/episode")[-1]
    agents = s.graph.messages("/sim/agents")[-1]
    assert [a.name for a in agents.agents] == list(AGENTS) and episode.source == "fake_game"
    path = str(tmp_path / "drive.mcap")
    started = time.monotonic()
    answer = _call(s, "start_recording", path=path)
    assert answer.success, answer.message
    again = _call(s, "start_recording", path=str(tmp_path / "other.mcap"))
    assert not again.success and "already recording" in again.message
    status = _call(s, "get_episode_status")
    assert status.recording and status.record_path == path and status.episode_id == episode.episode_id
    _drive(s)
    s.drain()
    stopped = _call(s, "stop_recording")
    assert stopped.success and stopped.path == path
    # episode, agents, objects, shifts, conditions, markers; clock and states at the start; then four
    # a step; for viewers /tf_static and two robot_descriptions, then /tf and two joint_states at
    # every fourth step (30 Hz)
    first = read_episode(path).steps[0].step
    views = 3 * sum(1 for step in range(first, first + REQUESTS * 12 + 1) if step % 4 == 0)
    assert stopped.message_count == 6 + 3 + 2 + 4 * REQUESTS * 12 + views
    live = [m for t, m in s.graph.received["/sim/agent_states"] if t >= started]
    live_by_stamp = {m.header.stamp.sec * 10**9 + m.header.stamp.nanosec: m for m in live}
    assert len(live_by_stamp) >= REQUESTS * 12  # every step's states, each delivered before the step answered

    # rosbags: its own rosbag2 reader and CDR decoder
    recorded = {}
    with AnyReader([tmp_path / "drive.mcap"], default_typestore=get_typestore(Stores.ROS2_JAZZY)) as reader:
        connections = [c for c in reader.connections if c.topic == "/sim/agent_states"]
        for connection, timestamp, raw in reader.messages(connections=connections):
            recorded[timestamp] = reader.deserialize(raw, connection.msgtype)
    assert len(recorded) == REQUESTS * 12 + 1
    odom = {agent: _odom_by_stamp(s, agent, started) for agent in AGENTS}
    compared = worst = 0.0
    for stamp, logged in recorded.items():
        assert stamp == logged.header.stamp.sec * 10**9 + logged.header.stamp.nanosec
        delivered = live_by_stamp.get(stamp)
        if delivered is None:
            assert logged.step == 0  # the state the recording started from, before any step
            continue
        assert delivered.step == logged.step
        for have, want in zip(logged.agents, delivered.agents):
            assert have.name == want.name
            for a, b in ((have.pose.position, want.pose.position),
                         (have.pose.orientation, want.pose.orientation),
                         (have.twist.linear, want.twist.linear), (have.twist.angular, want.twist.angular)):
                assert (a.x, a.y, a.z) == (b.x, b.y, b.z)
            assert list(have.wheel_contact) == list(want.wheel_contact)
            assert list(have.surface_class) == list(want.surface_class)
            assert list(have.field_id) == list(want.field_id)
            assert have.energy.ground_loss_j == want.energy.ground_loss_j
            assert (have.heading_rad, have.speed_mps, have.steer_rad, have.control) == \
                (want.heading_rad, want.speed_mps, want.steer_rad, want.control)
            truth = odom[have.name].get(stamp)
            if truth is not None:  # the INS epochs (100 Hz) of the physics steps (120 Hz)
                p = truth.pose.pose.position
                worst = max(worst, math.dist((p.x, p.y, p.z), (have.pose.position.x, have.pose.position.y,
                                                               have.pose.position.z)))
                compared += 1
    assert compared > REQUESTS * 10 and worst < 1e-9
    assert all(a.control == 1 for m in list(recorded.values())[1:] for a in m.agents)  # driven
    print(f"\nrecorded {len(recorded)} steps of {len(AGENTS)} agents; ground truth compared at "
          f"{compared:.0f} stamps, largest distance {worst:.2e} m")

    # replay: the same ground truth, bit for bit, at the same stamps
    for agent in AGENTS:
        s.release(agent)
    replay_started = time.monotonic()
    answer = _call(s, "start_replay", path=path)
    assert answer.success, answer.message
    assert answer.start_s == 0.0 and answer.end_s == pytest.approx(REQUESTS * 0.1)
    s.graph.spin_until(lambda: s.graph.messages("/sim/episode")[-1].replay_of == path, 20, "replay episode")
    for _ in range(REQUESTS):
        s.step(12)
    replayed = {agent: _odom_by_stamp(s, agent, replay_started) for agent in AGENTS}
    for agent in AGENTS:
        assert len(replayed[agent]) >= REQUESTS * 10
        for stamp, truth in replayed[agent].items():
            before = odom[agent][stamp]
            assert truth.pose.pose == before.pose.pose and truth.twist.twist == before.twist.twist, stamp
    status = _call(s, "get_episode_status")
    assert status.replaying and not status.replay_ended
    s.step(12)
    status = _call(s, "get_episode_status")
    assert status.replay_ended and status.replay_path == path
    assert "ended at world time" in s.logs()
    assert _call(s, "stop_replay").success
    log = read_episode(path)
    assert log.metadata["agents"] == ",".join(AGENTS)


def test_the_services_say_what_is_wrong_and_the_session_goes_on(session, tmp_path):
    s = session
    for name, fields, text in (
            ("start_replay", {"path": str(tmp_path / "missing.mcap")}, "cannot read"),
            ("start_replay", {"path": ""}, "path is empty"),
            ("start_recording", {"path": str(tmp_path / "no" / "dir.mcap")}, "cannot create"),
            ("stop_recording", {}, "not recording"),
            ("stop_replay", {}, "not replaying")):
        answer = _call(s, name, **fields)
        assert not answer.success and text in answer.message, (name, answer.message)
    (tmp_path / "text.mcap").write_text("not an episode log")
    answer = _call(s, "start_replay", path=str(tmp_path / "text.mcap"))
    assert not answer.success and "not an MCAP file" in answer.message
    s.step(12)  # the session goes on


# sim_control as a user without acres_interfaces runs it: the import fails as it would there.
WITHOUT_ACRES_INTERFACES = ("import sys; sys.modules['acres_interfaces'] = None; "
                            "from acres_sim.nodes.sim_control import main; sys.exit(main())")


def test_without_acres_interfaces_sim_control_steps_and_one_warn_says_so():
    from simulation_interfaces import srv
    from simulation_interfaces.msg import Result
    from support.bridge import Graph, Process, free_ports, ros_env, start_bridge, start_fake_game

    domain = DOMAIN + 1
    port, control = free_ports(2)
    game = start_fake_game(["--port", str(port), "--lockstep", "--control-port", str(control), "--cached"],
                           domain)
    game.wait_for(f"ACRES_SIM_CONTROL_LISTENING port={control}", 60)
    bridge = start_bridge(port, domain, namespace="/polaris")
    node = Process([sys.executable, "-c", WITHOUT_ACRES_INTERFACES, "--ros-args", "-p",
                    f"control_port:={control}", "-p", "barrier_timeout_s:=30.0"],
                   ros_env(domain), "sim_control without acres_interfaces")
    graph = Graph(domain)
    try:
        client = graph.node.create_client(srv.StepSimulation, "/step_simulation")
        graph.spin_until(client.service_is_ready, 60, "step_simulation")
        answer = call_service(graph, client, 60.0, steps=12)
        assert answer.result.result == Result.RESULT_OK, answer.result.error_message
        services = {name for name, _ in graph.node.get_service_names_and_types()}
        topics = {name for name, _ in graph.node.get_topic_names_and_types()}
        assert "/start_recording" not in services and "/sim/agent_states" not in topics
    finally:
        graph.close()
        code = node.stop()
        bridge.stop()
        game.stop()
    log = node.output()
    assert code == 0
    assert log.count("acres_interfaces does not import") == 1
