"""Lockstep and the control channel of the fake game, over real sockets.

The protocol page's table (three requests of 12 steps with the Polaris) must come out exactly.
"""

from __future__ import annotations

import json
import socket
import time
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from support.fake_game import TIMEOUT_S, FakeGame
from support.fake_game import Client as StreamClient

from acres_sim.fake_game.simulation.world_clock import due_step, world_time
from acres_sim.stream.timing import PHYSICS_HZ
from acres_sim.stream.protocol import FrameHeader, FrameType, decode_barrier, decode_lidar
from acres_sim.stream.hello import parse_hello


class Control:
    """A control-channel client: one JSON request per line, one answer per line."""

    def __init__(self, port: int):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S)
        self.file = self.sock.makefile("rwb")

    def raw(self, line: bytes) -> dict:
        self.file.write(line + b"\n")
        self.file.flush()
        return json.loads(self.file.readline())

    def request(self, **fields) -> dict:
        return self.raw(json.dumps(fields).encode())

    def close(self) -> None:
        self.file.close()
        self.sock.close()


class Client(StreamClient):
    def until_barrier(self) -> list[tuple[FrameHeader, bytearray]]:
        """Every frame up to and including the next barrier."""
        frames = []
        while True:
            header, payload = self.read()
            frames.append((header, payload))
            if header.frame_type == FrameType.BARRIER:
                return frames

    def nothing_pending(self, wait_s: float = 0.3) -> bool:
        self.sock.settimeout(wait_s)
        try:
            self.sock.recv(1)
        except TimeoutError:
            return True
        finally:
            self.sock.settimeout(TIMEOUT_S)
        return False


@pytest.fixture
def lockstep_game():
    games: list[FakeGame] = []

    def start(*args: str) -> tuple[FakeGame, int, int]:
        game = FakeGame("--lockstep", "--control-port", "0", *args)
        games.append(game)
        stream = int(game.wait_line(r"^ACRES_SENSOR_STREAM_LISTENING agent=\w+ port=(\d+)$").group(1))
        control = int(game.wait_line(r"^ACRES_SIM_CONTROL_LISTENING port=(\d+)$").group(1))
        return game, stream, control

    yield start
    for game in games:
        if game.proc.poll() is None:
            game.proc.kill()
            game.proc.wait()


def test_seed_lockstep_table(lockstep_game):
    """Three requests of 12 steps with the Polaris: the protocol page's table, exactly."""
    game, stream_port, control_port = lockstep_game("--port", "0", "--vehicle", "polaris")
    client = Client(stream_port)
    hello, payload = client.read()
    assert (hello.frame_type, hello.sequence, hello.stamp) == (FrameType.HELLO, 0, 0.0)
    assert parse_hello(payload).camera.enabled
    assert client.nothing_pending()  # before the first request, only the Hello
    control = Control(control_port)
    for request, (step, sequence, stamp) in enumerate(((12, 25, 0.1), (24, 50, 0.2), (36, 75, 0.3))):
        answer = control.request(op="step", steps=12)
        assert answer == {"ok": True, "step": step, "time_s": pytest.approx(step / 120.0, abs=1e-12)}
        frames = client.until_barrier()
        counts = Counter(h.frame_type for h, _ in frames[:-1])
        assert counts == {FrameType.CLOCK: 12, FrameType.INS: 10, FrameType.LIDAR: 1, FrameType.CAMERA: 1}
        barrier, payload = frames[-1]
        assert (barrier.sequence, barrier.payload_size, decode_barrier(payload)) == (sequence, 8, step)
        assert barrier.stamp == stamp
        # Sequences run without a gap; clock and INS stamps are the steps of this request.
        assert [h.sequence for h, _ in frames] == list(range(sequence - 24, sequence + 1))
        clocks = [h.stamp for h, _ in frames if h.frame_type == FrameType.CLOCK]
        assert clocks == [n / 120.0 for n in range(12 * request + 1, 12 * request + 13)]
        heavy = [h for h, _ in frames if h.frame_type in (FrameType.LIDAR, FrameType.CAMERA)]
        assert all(h.stamp == stamp for h in heavy)  # due at k/10, produced at the step of that time
        # Clock and INS of a step are queued before the renders of that step.
        order = [h.frame_type for h, _ in frames]
        assert max(order.index(FrameType.LIDAR), order.index(FrameType.CAMERA)) > order.index(FrameType.CLOCK)
        assert client.nothing_pending(0.1)
    status = control.request(op="status")
    assert status["ok"] and status["step"] == 36 and status["paused"] is True
    control.close()
    client.close()
    assert game.stop()[0] == 0


def test_polaris_rates_over_ten_seconds(lockstep_game):
    """1200 steps: clock 1200, INS 1000 at 1- or 2-step intervals, 100 clouds, 100 images."""
    game, stream_port, control_port = lockstep_game("--port", "0", "--vehicle", "polaris", "--cached")
    client = Client(stream_port)
    client.read()
    control = Control(control_port)
    stamps: dict[FrameType, list[float]] = {t: [] for t in FrameType}
    for _ in range(10):  # 1 s per request keeps the queue far below the drop limit
        assert control.request(op="step", steps=120)["ok"]
        for header, payload in client.until_barrier():
            stamps[header.frame_type].append(header.stamp)
            if header.frame_type == FrameType.LIDAR:
                assert decode_lidar(payload).points.shape == (1800, 32, 4)
    for kind, hz in ((FrameType.CLOCK, 120), (FrameType.INS, 100), (FrameType.LIDAR, 10),
                     (FrameType.CAMERA, 10)):
        assert len(stamps[kind]) == 10 * hz, kind
    steps = np.round(np.array(stamps[FrameType.INS]) * 120.0).astype(int)
    assert set(np.diff(steps).tolist()) == {1, 2}
    assert np.mean(np.diff(stamps[FrameType.INS])) == pytest.approx(0.01, rel=0.01)
    assert stamps[FrameType.BARRIER] == [float(n) for n in range(1, 11)]
    control.close()
    client.close()
    assert game.stop()[0] == 0


def _ins_payloads(seed: int) -> dict[float, bytes]:
    game = FakeGame("--lockstep", "--control-port", "0", "--port", "0", "--vehicle", "maxxum",
                    "--seed", str(seed))
    try:
        stream = int(game.wait_line(r"^ACRES_SENSOR_STREAM_LISTENING agent=maxxum port=(\d+)$").group(1))
        control = Control(int(game.wait_line(r"^ACRES_SIM_CONTROL_LISTENING port=(\d+)$").group(1)))
        client = Client(stream)
        client.read()
        assert control.request(op="step", steps=60)["ok"]
        out = {h.stamp: bytes(p) for h, p in client.until_barrier() if h.frame_type == FrameType.INS}
        control.close()
        client.close()
        assert game.stop()[0] == 0
        return out
    finally:
        if game.proc.poll() is None:
            game.proc.kill()


def test_same_seed_gives_identical_ins():
    first, again, other = _ins_payloads(7), _ins_payloads(7), _ins_payloads(8)
    assert len(first) == 50
    assert first == again  # byte for byte
    assert first != other  # and the seed matters (noise is on)


def test_core_flavor(lockstep_game):
    """ACRES Core: Hello sequence 0 at the world time on every connection, no camera."""
    game, stream_port, control_port = lockstep_game("--port", "0", "--vehicle", "polaris",
                                                    "--flavor", "core")
    client = Client(stream_port)
    hello, payload = client.read()
    assert (hello.sequence, hello.stamp) == (0, 0.0)
    assert parse_hello(payload).camera.enabled is False
    control = Control(control_port)
    assert control.request(op="step", steps=12)["step"] == 12
    frames = client.until_barrier()
    counts = Counter(h.frame_type for h, _ in frames)
    assert FrameType.CAMERA not in counts and counts[FrameType.LIDAR] == 1
    assert [h.sequence for h, _ in frames] == list(range(1, 25))  # the Hello did not take 0 from the counter
    client.close()
    game.wait_line(r"DISCONNECTED agent=polaris .*reason=peer closed")
    client = Client(stream_port)
    hello, _ = client.read()
    assert (hello.frame_type, hello.sequence, hello.stamp) == (FrameType.HELLO, 0, 0.1)
    assert control.request(op="step", steps=1)["ok"]
    clock, _ = client.read()
    assert clock.sequence == 25  # the data frames' counter goes on
    control.close()
    client.close()
    assert game.stop()[0] == 0


def test_control_channel_errors_keep_the_connection(lockstep_game):
    game, _, control_port = lockstep_game("--port", "0", "--vehicle", "maxxum")
    control = Control(control_port)
    assert control.raw(b"{not json")["ok"] is False
    assert control.raw(b"[1, 2]")["ok"] is False
    answer = control.request(op="jump")
    assert answer["ok"] is False and "jump" in answer["error"]
    for steps in (0, -1, 1.5, "3", None, True):
        assert control.request(op="step", steps=steps)["ok"] is False, steps
    assert control.raw(b"x" * 70000)["ok"] is False  # an over-long line is refused, then skipped
    assert control.request(op="step", steps=3) == {"ok": True, "step": 3, "time_s": 0.025}
    assert control.request(op="pause")["paused"] is True
    playing = control.request(op="play")
    assert playing["ok"] and playing["paused"] is False
    deadline = time.monotonic() + TIMEOUT_S
    while control.request(op="status")["step"] <= 3:  # play lets the world run freely
        assert time.monotonic() < deadline
        time.sleep(0.05)
    step = control.request(op="step", steps=2)  # a step request holds the world again
    assert step["ok"]
    assert control.request(op="status")["step"] == step["step"]
    control.close()
    assert game.stop()[0] == 0


@given(hz=st.one_of(st.integers(1, 120).map(float), st.floats(1.0, 120.0)), epoch=st.integers(1, 10**6))
def test_epoch_is_the_first_step_at_or_after_its_due_time(hz, epoch):
    """The rule of the protocol page, checked against exact rational arithmetic."""
    step = due_step(epoch, hz)
    due = Fraction(epoch) / Fraction(hz)
    assert Fraction(step, PHYSICS_HZ) >= due > Fraction(step - 1, PHYSICS_HZ)
    interval = due_step(epoch + 1, hz) - step  # 120 / hz rounded down or up
    assert int(PHYSICS_HZ // hz) <= interval <= int(PHYSICS_HZ // hz) + 1


def test_world_time_is_not_accumulated():
    assert world_time(12) == 0.1 and world_time(36) == 0.3
    assert world_time(120 * 3600 * 24) == 86400.0


def _step_frames(control: Control, client: Client, steps: int) -> dict[FrameType, list]:
    assert control.request(op="step", steps=steps)["ok"]
    frames: dict[FrameType, list] = {}
    for h, p in client.until_barrier():
        frames.setdefault(h.frame_type, []).append((h.stamp, bytes(p)))
    return frames


def test_reset_all_repeats_a_fresh_start_and_time_reset_goes_on_from_where_it_is(lockstep_game):
    game, stream, control_port = lockstep_game("--port", "0", "--vehicle", "maxxum")
    control, client = Control(control_port), Client(stream)
    client.read()  # the Hello
    fresh = _step_frames(control, client, 24)
    _step_frames(control, client, 36)
    assert control.request(op="reset", scope="all") == {"ok": True, "step": 0, "time_s": 0.0}
    again = _step_frames(control, client, 24)
    # as launched: the same stamps and the same bytes (truth, noise, clouds) as the first 24 steps
    # (renders on two workers may finish in either order)
    for kind in (FrameType.CLOCK, FrameType.INS, FrameType.LIDAR):
        assert sorted(again[kind]) == sorted(fresh[kind]) and len(fresh[kind]) > 1, kind
    before = control.request(op="get_state", agent="maxxum")
    assert control.request(op="reset", scope="time")["step"] == 0
    after = control.request(op="get_state", agent="maxxum")
    assert after["time_s"] == 0.0 and after["position"] == before["position"]
    later = _step_frames(control, client, 12)
    assert [stamp for stamp, _ in later[FrameType.LIDAR]] == [0.1]  # the clock starts again
    moved = control.request(op="get_state", agent="maxxum")["position"]
    assert moved != before["position"]  # and the vehicle drives on from where it was
    control.close()
    client.close()
    assert game.stop()[0] == 0


def test_set_state_holds_the_agent_and_errors_keep_the_channel(lockstep_game):
    game, stream, control_port = lockstep_game("--port", "0", "--vehicle", "maxxum", "--no-noise")
    control, client = Control(control_port), Client(stream)
    client.read()
    placed = control.request(op="set_state", agent="maxxum", position=[3.0, 4.0, 0.5],
                             orientation=[0.0, 0.0, 0.0, 2.0], linear_velocity=[1.0, 0.0, 0.0])
    assert placed["ok"] and placed["held"] and placed["orientation"] == [0.0, 0.0, 0.0, 1.0]
    frames = _step_frames(control, client, 12)
    ins = np.frombuffer(frames[FrameType.INS][-1][1], "<f8")
    from acres_sim.stream.protocol import Ins
    # the truth of the last epoch (stamped 0.1 s): 0.1 s of 1 m/s east from the placed pose
    assert ins[Ins.TruthEnuX:Ins.TruthEnuZ + 1] == pytest.approx([3.1, 4.0, 0.5], abs=1e-9)
    assert control.request(op="get_state", agent="maxxum")["position"] == pytest.approx([3.1, 4.0, 0.5])
    for request, code in (
            ({"op": "get_state", "agent": "nobody"}, "not_found"),
            ({"op": "set_state", "agent": "maxxum", "position": [0, 0], "orientation": [0, 0, 0, 1]},
             "invalid_pose"),
            ({"op": "set_state", "agent": "maxxum", "position": [0, 0, 0], "orientation": [0, 0, 0, 0]},
             "invalid_pose"),
            ({"op": "set_state", "agent": "maxxum", "position": [1e6, 0, 0], "orientation": [0, 0, 0, 1]},
             "invalid_pose"),
            ({"op": "reset", "scope": "everything"}, "bad_request")):
        answer = control.request(**request)
        assert answer["ok"] is False and answer["code"] == code and answer["error"], request
    assert control.request(op="play")["ok"]
    refused = control.request(op="step", steps=1, paused_only=True)
    assert refused["ok"] is False and refused["code"] == "incorrect_state"
    assert control.request(op="pause")["ok"]
    assert control.request(op="step", steps=1, paused_only=True)["ok"]
    assert control.request(op="reset", scope="state")["ok"]  # back on the route
    assert control.request(op="get_state", agent="maxxum")["held"] is False
    control.close()
    client.close()
    assert game.stop()[0] == 0
