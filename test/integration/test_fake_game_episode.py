"""The fake game's episode over real sockets, read with the ROS-free clients sim_control uses (the
control channel's ControlClient and the watch connection's EpisodeFeed): every step's agent states,
the episode log recorded and read back (mcap with CRCs, rosbags), a replay whose sensor stream equals
the recorded run's byte for byte, a replay recorded again, the end of a replay, every bad file, and
a game killed while recording."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest
from support.fake_game import Client, FakeGame, FeedEvents, wait_streams_connected

from acres_sim.episode.log_file import EpisodeLogError, iter_log_messages, read_episode
from acres_sim.game.control_client import ControlClient, ControlRefused
from acres_sim.game.episode_feed import EpisodeFeed
from acres_sim.channels.vehicle import VehicleCommand
from acres_sim.game.vehicle_client import VehicleClient
from acres_sim.stream.protocol import FrameType
from harness.processes import Proc

pytestmark = pytest.mark.ros_free  # no ROS graph nor message: CI runs it on one distribution

AGENTS = ("polaris", "maxxum")
# A recording starts with the episode, the agents, the objects, the shifts and the conditions, and
# the state the world is in (clock, states); every step adds clock, farm events, farm stamps, states.
LATCHED = 6  # episode, agents, objects, shifts, conditions, markers
# for viewers, of two agents: /tf_static and a robot_description each at the start; /tf and a
# joint_states each at every step
VIEWS_LATCHED, VIEWS_AT_30_HZ = 3, 3
PER_STEP = 4  # /clock, farm events, farm stamps, agent states


def _views(first: int, last: int) -> int:
    """The viewers' messages of steps first..last: at every fourth step (30 Hz)."""
    return VIEWS_AT_30_HZ * sum(1 for step in range(first, last + 1) if step % 4 == 0)


def _game(*extra: str, vehicles: bool = False) -> tuple[FakeGame, dict[str, int], ControlClient]:
    args = ["--lockstep", "--control-port", "0", "--ports", "0,0", "--vehicles", ",".join(AGENTS), *extra]
    if vehicles:
        args += ["--vehicle-ports", "0,0"]
    game = FakeGame(*args)
    ports = {a: game.stream_port(a) for a in AGENTS}
    return game, ports, ControlClient(game.control_port(), timeout_s=60.0)


def _stream_frames(client: Client, frames: dict, stop: threading.Event) -> None:
    while not stop.is_set():
        try:
            header, payload = client.read()
        except (OSError, ConnectionError):
            return
        frames.setdefault(header.frame_type, []).append((header.stamp, bytes(payload)))


def _drive_and_record(tmp_path: Path, log: str, replay: str | None, steps: int, requests: int,
                      commands: bool) -> tuple[dict, dict]:
    """Run a lockstep session of both agents; the first agent driven through its Vehicle Bridge with
    a changing command when `commands`; every stream frame of both agents collected."""
    extra = ["--episode-log", log] + (["--episode-replay", replay] if replay else [])
    game, ports, control = _game(*extra, vehicles=True)
    clients = {a: Client(ports[a]) for a in AGENTS}
    frames: dict[str, dict] = {a: {} for a in AGENTS}
    stop = threading.Event()
    readers = [threading.Thread(target=_stream_frames, args=(clients[a], frames[a], stop), daemon=True)
               for a in AGENTS]
    for reader in readers:
        reader.start()
    vehicle = None
    try:
        wait_streams_connected(control)  # every frame of the run is rendered for its client
        if commands:
            described = threading.Event()  # the hello came: the client's connection is up
            vehicle = VehicleClient(game.vehicle_port("polaris"), on_info=lambda info: described.set(),
                                    on_report=lambda report: None, on_barrier=lambda step, t: None,
                                    reconnect_min_s=0.05, reconnect_max_s=0.2)
            vehicle.start()
            assert described.wait(30.0)
        for request in range(requests):
            if vehicle is not None:
                stamp = request * steps / 120.0
                steer = 0.3 * (-1) ** (request // 4)
                assert vehicle.send(VehicleCommand(stamp_s=stamp, steer_request_rad=steer, throttle=0.5,
                                                   brake=0.0, gear="drive"))
                time.sleep(0.1)  # read by the bridge before the step (nothing else moves in lockstep)
            control.step(steps)
        status = control.episode_status()
        # the last step's frames were queued before its barrier: read them all before the game stops
        end = requests * steps / 120.0
        deadline = time.monotonic() + 30.0
        while not all(any(stamp >= end - 1e-9 for stamp, _ in frames[a].get(FrameType.BARRIER, []))
                      for a in AGENTS):
            assert time.monotonic() < deadline, "the last barrier did not come"
            time.sleep(0.02)
    finally:
        if vehicle is not None:
            vehicle.stop()
        control.close()
        code, output = game.stop()
        stop.set()
        for client in clients.values():
            client.close()
    assert code == 0, output[-2000:]
    assert f"ACRES_FAKE_GAME_RECORDED path={log}" in output
    return frames, status


def test_a_replay_gives_the_recorded_states_and_the_same_sensor_stream_byte_for_byte(tmp_path):
    recorded, replayed = str(tmp_path / "drive.mcap"), str(tmp_path / "replay.mcap")
    first, status = _drive_and_record(tmp_path, recorded, None, 12, 24, commands=True)
    assert status["recording"]["recording"] and not status["replay"]["replaying"]
    second, status = _drive_and_record(tmp_path, replayed, recorded, 12, 24, commands=False)
    assert status["replay"]["replaying"] and status["replay"]["path"] == recorded
    a, b = read_episode(recorded), read_episode(replayed)
    assert len(a.steps) == len(b.steps) == 24 * 12 + 1  # step 0, then every physics step
    assert [s.step for s in a.steps] == list(range(0, 24 * 12 + 1))
    # the driven vehicle really was driven, and the replay logged what it followed, bit for bit
    assert {s.agents["polaris"]["control"] for s in a.steps[1:]} == {1}
    assert all(x.time_ns == y.time_ns and x.agents == y.agents for x, y in zip(a.steps, b.steps))
    assert b.episode["replay_of"] == recorded
    for agent in AGENTS:
        for kind in (FrameType.CLOCK, FrameType.INS, FrameType.LIDAR, FrameType.CAMERA):
            got, want = sorted(second[agent].get(kind, [])), sorted(first[agent].get(kind, []))
            assert len(want) > 1 or (agent, kind) == ("maxxum", FrameType.CAMERA), (agent, kind)  # no camera
            if agent == "polaris":  # driven: its sensors are a function of the vehicle model's track
                assert got == want, (agent, kind)
            else:  # on its route: replayed through the logged knots, the stamps are the same
                assert [s for s, _ in got] == [s for s, _ in want], (agent, kind)


@pytest.fixture
def watched_game():
    started = []

    def start(*extra: str) -> tuple[FakeGame, ControlClient, FeedEvents, EpisodeFeed]:
        game, _ports, control = _game(*extra)
        events = FeedEvents()
        feed = EpisodeFeed(control.port, events.on_event, events.problems.append)
        feed.start()
        started.append((game, control, feed))
        events.wait(lambda e: e.of("states"))
        return game, control, events, feed

    yield start
    for game, control, feed in started:
        feed.stop()
        control.close()
        if game.proc.poll() is None:
            game.stop()


def test_every_step_s_states_reach_the_feed_and_the_log_holds_them(watched_game, tmp_path):
    game, control, events, feed = watched_game()
    episode, agents = events.of("episode")[-1], events.of("agents")[-1]
    assert [a["name"] for a in agents["agents"]] == list(AGENTS)
    assert agents["agents"][1]["vehicle"] == "maxxum" and agents["agents"][1]["wheelbase_m"] == 2.69
    path = str(tmp_path / "log.mcap")
    assert control.record_start(path)["recording"]
    for _ in range(5):
        done = control.step(12)
        assert feed.wait_handled(done.step, 10.0)  # what sim_control waits for before it answers
    # republish: the last step's states once more on the feed (a late subscriber's), not logged again
    before = len(events.of("states"))
    assert control.request({"op": "republish"})["step"] == done.step
    events.wait(lambda e: len(e.of("states")) == before + 1)
    assert events.of("states")[-1] == events.of("states")[-2]
    summary = control.record_stop()
    count = LATCHED + VIEWS_LATCHED + PER_STEP * 61 - 2 + _views(0, 60)
    assert summary["path"] == path and summary["message_count"] == count
    states = [s for s in events.of("states") if s["step"] >= 0]
    assert [s["step"] for s in states][-62:] == list(range(0, 61)) + [60]
    log = read_episode(path)
    assert log.episode["episode_id"] == episode["episode_id"]
    assert log.metadata["agents"] == "polaris,maxxum" and log.metadata["vehicles"] == "polaris,maxxum"
    # what the feed delivered (and sim_control publishes) is what the log holds, to the bit
    by_step = {s["step"]: s for s in states}
    for logged in log.steps:
        assert {a["name"]: a for a in by_step[logged.step]["agents"]} == logged.agents
    last = log.steps[-1].agents["maxxum"]
    ledger = last["energy"]
    assert ledger["traction_j"] > 0 and ledger["rolling_j"] > 0
    assert ledger["ground_loss_j"] == pytest.approx(ledger["slip_j"] + ledger["lateral_j"] + ledger["soil_j"])
    assert set(last["surface_class"]) <= {1, 2, 3, 4} and last["wheel_contact"] == [True] * 4
    # ground truth of the control channel at the same step: the same pose
    state = control.get_state("maxxum")
    assert state.position == (last["pose"]["position"]["x"], last["pose"]["position"]["y"],
                              last["pose"]["position"]["z"])


def test_bad_files_get_a_clear_error_and_the_session_goes_on(watched_game, tmp_path):
    game, control, events, _feed = watched_game()
    good = str(tmp_path / "good.mcap")
    control.record_start(good)
    with pytest.raises(ControlRefused, match="already recording") as refused:
        control.record_start(str(tmp_path / "other.mcap"))
    assert refused.value.code == "bad_request"
    control.step(24)
    control.record_stop()
    size = os.path.getsize(good)
    with pytest.raises(ControlRefused, match="cannot create") as refused:  # an existing file stays
        control.record_start(good)
    assert refused.value.code == "file_error" and os.path.getsize(good) == size
    with pytest.raises(ControlRefused, match="cannot create"):
        control.record_start(str(tmp_path / "no" / "such" / "dir.mcap"))
    data = Path(good).read_bytes()
    bad = {
        "missing.mcap": None,
        "text.mcap": b"this is not an MCAP file\n" * 10,
        "truncated.mcap": data[: len(data) // 2],
        "crc.mcap": data[:200] + bytes([data[200] ^ 0xFF]) + data[201:],
    }
    for name, content in bad.items():
        path = tmp_path / name
        if content is not None:
            path.write_bytes(content)
        with pytest.raises(ControlRefused) as refused:
            control.replay_start(str(path))
        assert refused.value.code == "file_error", (name, str(refused.value))
        assert str(path) in str(refused.value)
    # a log of agents this session does not have
    single = str(tmp_path / "single.mcap")
    solo = FakeGame("--lockstep", "--control-port", "0", "--port", "0", "--agents", "tractor", "--vehicle",
                    "maxxum", "--episode-log", single)
    solo_control = ControlClient(solo.control_port(), timeout_s=30.0)
    solo_control.step(12)
    solo_control.close()
    solo.stop()
    with pytest.raises(ControlRefused, match="tractor are not in this session") as refused:
        control.replay_start(single)
    assert refused.value.code == "bad_request"
    done = control.step(12)  # the session went on
    assert done.step == 36 and not control.episode_status()["replay"]["replaying"]


def test_a_replay_ends_with_the_agents_holding_their_last_logged_state(watched_game, tmp_path):
    path = str(tmp_path / "short.mcap")
    game, control, events, _feed = watched_game("--episode-log", path)
    control.step(30)
    control.record_stop()
    log = read_episode(path)
    control.replay_start(path)
    events.wait(lambda e: e.of("episode")[-1]["replay_of"] == path)
    control.step(29)
    assert not control.episode_status()["replay"]["ended"]
    control.step(10)  # past its end
    status = control.episode_status()["replay"]
    assert status["ended"] and status["end_s"] == pytest.approx(30 / 120)
    last = log.steps[-1].agents
    for agent in AGENTS:
        state = control.get_state(agent)
        p = last[agent]["pose"]["position"]
        assert state.position == pytest.approx((p["x"], p["y"], p["z"]), abs=1e-9)
        assert state.linear_velocity == pytest.approx((0.0, 0.0, 0.0), abs=1e-9)
    events.wait(lambda e: any(r.get("ended") for r in e.of("replay")))
    events.wait(lambda e: e.of("states")[-1]["step"] == 39)  # the watch connection is not the answer's
    final = events.of("states")[-1]
    assert [a["pose"] for a in final["agents"]] == [last[a]["pose"] for a in AGENTS]
    control.replay_stop()
    assert not control.episode_status()["replay"]["replaying"]


def test_a_game_killed_while_recording_leaves_its_closed_chunks_readable(tmp_path):
    path = tmp_path / "killed.mcap"
    game = FakeGame("--port", "0", "--agents", "a,b,c,d", "--ports", "0,0,0,0", "--vehicles",
                    "polaris,maxxum,polaris,maxxum", "--realtime-factor", "0", "--cached", "--flat-ground",
                    "--episode-log", str(path))
    deadline = time.monotonic() + 120
    while (not path.exists() or path.stat().st_size < 2.5 * (1 << 20)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert path.stat().st_size >= 2.5 * (1 << 20)
    game.proc.send_signal(signal.SIGKILL)
    game.proc.wait()
    game.stop()
    read = []
    with pytest.raises(EpisodeLogError, match="not a complete MCAP file"):
        for item in iter_log_messages(path):  # chunk CRCs checked
            read.append(item)
    topics = {topic for topic, _schema, _t, _data in read}
    assert {"/sim/episode", "/sim/agents", "/sim/agent_states", "/clock"} <= topics
    # two closed chunks of about 1 MiB at least: every message of them reads back
    assert sum(len(d) for *_, d in read) > 2 * 0.9 * (1 << 20)
    with pytest.raises(EpisodeLogError, match="truncated"):
        read_episode(path)


def test_a_full_disk_ends_the_recording_with_an_error_and_the_game_goes_on(tmp_path):
    """The file size limit of the process (RLIMIT_FSIZE) stands in for a full disk: the first chunk
    cannot be written."""
    path = tmp_path / "full.mcap"
    script = ("import resource, signal, sys; signal.signal(signal.SIGXFSZ, signal.SIG_IGN); "
              "resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000)); "
              "from acres_sim.fake_game.cli import main; sys.exit(main(sys.argv[1:]))")
    proc = Proc([sys.executable, "-c", script, "--lockstep", "--control-port", "0", "--port", "0",
                 "--cached", "--flat-ground", "--episode-log", str(path)], dict(os.environ), "fake_game")
    try:
        line = proc.wait_line(lambda text: text.startswith("ACRES_SIM_CONTROL_LISTENING"), 60)
        control = ControlClient(int(line.rsplit("=", 1)[1]), timeout_s=120.0)
        for _ in range(8):
            control.step(1000)
            if not control.episode_status()["recording"]["recording"]:
                break
        failed = proc.wait_line(lambda text: text.startswith("ACRES_FAKE_GAME_RECORDING_FAILED"), 10)
        assert str(path) in failed and "File too large" in failed
        assert control.step(12).step > 1000  # the game goes on
        control.close()
    finally:
        assert proc.stop() == 0, proc.output()[-2000:]


def test_a_reset_all_starts_a_new_episode_and_a_reset_of_time_finishes_the_log(watched_game, tmp_path):
    game, control, events, _feed = watched_game()
    first = events.of("episode")[-1]["episode_id"]
    path = str(tmp_path / "until_reset.mcap")
    control.record_start(path)
    control.step(24)
    control.reset("state")  # the clock goes on: the log too
    control.step(12)
    assert control.episode_status()["recording"]["recording"]
    control.reset("all")  # the clock goes back: the file is finished first
    events.wait(lambda e: e.of("episode")[-1]["episode_id"] != first)
    assert not control.episode_status()["recording"]["recording"]
    count = LATCHED + VIEWS_LATCHED + PER_STEP * 37 - 2 + _views(0, 36)
    game.wait_line(rf"^ACRES_FAKE_GAME_RECORDED path=.*until_reset.mcap messages={count} .* "
                   r"reason=reset all$")
    log = read_episode(path)  # complete, with its summary
    assert [s.step for s in log.steps] == list(range(0, 37)) and log.episode["episode_id"] == first
    stopped = [r["stopped"] for r in events.of("recording") if "stopped" in r]
    assert stopped[-1]["reason"] == "reset all" and stopped[-1]["message_count"] == count
