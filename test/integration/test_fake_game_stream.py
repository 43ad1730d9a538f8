"""End-to-end tests of the fake game's sensor stream over real sockets.

Each test runs `python -m acres_sim.fake_game` as a subprocess on kernel-chosen ports (--port 0;
the LISTENING line names the port) and reads the stream with a plain socket client.
"""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from support.fake_game import REPO, TIMEOUT_S, Client, FakeGame

from acres_sim.stream.protocol import FrameType, decode_clock, decode_ins

from acres_sim.stream.hello import parse_hello

pytestmark = pytest.mark.ros_free  # no ROS graph nor message: CI runs it on one distribution

# The "Python Reader" example of the protocol page (Sensor Stream), verbatim; only the port changes.
PAGE_READER = textwrap.dedent('''\
    import json
    import socket
    import struct

    import numpy as np

    # magic, type, flags, sequence, payload bytes, stamp, publish time
    HEADER = struct.Struct("<4sHHIIdd")


    def read_exact(sock, count):
        data = bytearray()
        while len(data) < count:
            chunk = sock.recv(count - len(data))
            if not chunk:
                raise ConnectionError("the stream closed")
            data += chunk
        return bytes(data)


    def read_frame(sock):
        (magic, kind, flags, sequence, size,
         stamp_s, publish_s) = HEADER.unpack(read_exact(sock, 32))
        if magic != b"TSS1":
            raise ValueError("bad magic")
        return kind, sequence, stamp_s, read_exact(sock, size)


    def lidar_cloud(payload):
        columns, rings, _, _ = struct.unpack_from("<4I", payload)
        points = np.frombuffer(payload, "<f4", columns * rings * 4, 16)
        return points.reshape(columns, rings, 4)


    sock = socket.create_connection(("127.0.0.1", 5601))
    while True:
        kind, sequence, stamp_s, payload = read_frame(sock)
        if kind == 1:
            hello = json.loads(payload)
            print("hello", hello["agent"], hello["lidar"]["columns"],
                  "x", hello["lidar"]["rings"])
        elif kind == 4:
            cloud = lidar_cloud(payload)
            returns = np.isfinite(cloud[:, :, 0]).sum()
            print(f"lidar seq={sequence} stamp={stamp_s:.3f} s "
                  f"shape={cloud.shape} returns={returns}")
            break
    ''')


@pytest.fixture
def start_game():
    games: list[FakeGame] = []

    def start(*args: str) -> FakeGame:
        game = FakeGame(*args)
        games.append(game)
        return game

    yield start
    for game in games:
        if game.proc.poll() is None:
            game.proc.kill()
            game.proc.wait()


def test_seed_python_reader(start_game, tmp_path):
    """The protocol page's reader, unchanged but for the port, reads both vehicles."""
    game = start_game("--ports", "0,0", "--vehicles", "polaris,maxxum")
    script = tmp_path / "reader.py"
    for vehicle, columns, rings in (("polaris", 1800, 32), ("maxxum", 180, 8)):
        port = game.stream_port(vehicle)
        script.write_text(PAGE_READER.replace("5601", str(port)))
        out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                             timeout=TIMEOUT_S, check=True).stdout.splitlines()
        assert out[0] == f"hello {vehicle} {columns} x {rings}"
        assert re.fullmatch(rf"lidar seq=\d+ stamp=\d+\.\d{{3}} s shape=\({columns}, {rings}, 4\) "
                            r"returns=\d+", out[1]), out
        returns = int(out[1].rsplit("=", 1)[1])
        assert 0 < returns <= columns * rings
    code, err = game.stop()
    assert code == 0, err
    assert "Traceback" not in err


def test_rates_and_ins_intervals_free_running(start_game):
    """Ten seconds of world time as fast as possible: 120 / 100 / 10 Hz, INS on the steps.

    The Maxxum (no camera) keeps the data rate low enough for this reader at any world speed;
    the Polaris with its camera is measured in lockstep (test_fake_game_lockstep.py).
    """
    game = start_game("--port", "0", "--vehicle", "maxxum", "--realtime-factor", "0")
    client = Client(game.stream_port("maxxum"))
    header, payload = client.read()
    assert header.frame_type == FrameType.HELLO
    stamps: dict[FrameType, list[float]] = {t: [] for t in FrameType}
    offsets = set()
    last_sequence = header.sequence
    first_clock = None
    while True:
        header, payload = client.read()
        assert header.sequence == last_sequence + 1  # nothing is dropped for a reader that keeps up
        last_sequence = header.sequence
        kind = header.frame_type
        if kind == FrameType.CLOCK:
            offsets.add(round(header.stamp - decode_clock(payload), 6))
            if first_clock is None:
                first_clock = header.stamp
            elif header.stamp >= first_clock + 12.0:
                # At full speed the world runs ahead of the renders (a few scans in flight), so
                # read on for 2 s of world time to collect the window's last clouds.
                break
        stamps[kind].append(header.stamp)
    client.close()
    assert len(offsets) == 1 and offsets != {0.0}, offsets  # a constant, non-zero offset
    window = (first_clock, first_clock + 10.0)
    assert not stamps[FrameType.CAMERA]
    for kind, hz in ((FrameType.CLOCK, 120), (FrameType.INS, 100), (FrameType.LIDAR, 10)):
        count = sum(window[0] <= s < window[1] for s in stamps[kind])
        assert abs(count - 10 * hz) <= 0.01 * 10 * hz, (kind, count)
    # Every stamp is a physics step; the INS epochs are 1 or 2 steps apart.
    steps = np.array(stamps[FrameType.INS]) * 120.0
    assert np.allclose(steps, np.round(steps), atol=1e-6)
    intervals = np.diff(np.round(steps)).astype(int)
    assert set(intervals.tolist()) == {1, 2}
    clock_steps = np.round(np.array(stamps[FrameType.CLOCK]) * 120.0).astype(int)
    assert np.all(np.diff(clock_steps) == 1)
    code, err = game.stop()
    assert code == 0, err


def _stats(line: str) -> dict[str, tuple[int, float, int]]:
    return {m.group(1): (int(m.group(2)), float(m.group(3)), int(m.group(4)))
            for m in re.finditer(r"(\w+)=(\d+)/(\d+\.\d)MB/drop(\d+)", line)}


def test_slow_client_drops_lidar_and_camera_only(start_game):
    """A client that stops reading: heavy frames are dropped, clock and INS go on, the world too."""
    game = start_game("--port", "0", "--vehicle", "polaris", "--cached", "--max-queued-bytes", "3000000",
                      "--stats-period-s", "0.5", "--control-port", "0")
    port = game.stream_port("polaris")
    control = socket.create_connection(("127.0.0.1", game.control_port()), timeout=TIMEOUT_S)
    control_file = control.makefile("rwb")

    def status() -> dict:
        control_file.write(b'{"op": "status"}\n')
        control_file.flush()
        return json.loads(control_file.readline())

    client = Client(port, rcvbuf=65536)
    header, _ = client.read()
    assert header.frame_type == FrameType.HELLO
    connected_at = len(game.lines)
    before = status()
    wall_before = time.monotonic()
    # Stop reading. Wait for two STATS lines that both show LiDAR and camera drops.
    first = game.wait_line(r"^ACRES_SENSOR_STREAM_STATS agent=polaris .*lidar=\d+/[\d.]+MB/drop[1-9]",
                           start=connected_at)
    index = game.lines.index(first.string)
    second = game.wait_line(r"^ACRES_SENSOR_STREAM_STATS agent=polaris", start=index + 1)
    later = game.wait_line(r"^ACRES_SENSOR_STREAM_STATS agent=polaris",
                           start=game.lines.index(second.string) + 1)
    after = status()
    wall_after = time.monotonic()
    s1, s2 = _stats(second.string), _stats(later.string)
    assert re.search(r"queued_mb=\d+\.\d", later.string)
    for kind in ("lidar", "camera"):
        assert s2[kind][2] > s1[kind][2] > 0, (kind, s1, s2)  # more drops, counted per type
    for kind in ("clock", "ins"):
        assert s2[kind][0] > s1[kind][0], (kind, s1, s2)  # still queued
        assert s2[kind][2] == 0  # never dropped (the queue is far below twice the limit)
    # The world did not wait for the client: at a realtime factor of 1 its clock kept going
    # (a very loose bound: a blocked world would not move at all).
    assert after["time_s"] - before["time_s"] > 0.3 * (wall_after - wall_before)
    client.close()
    game.wait_line(r"^ACRES_SENSOR_STREAM_DISCONNECTED agent=polaris port=\d+ "
                   r"reason=(peer closed|send failed) queued_mb=\d+\.\d hello=1/")
    control.close()
    code, err = game.stop(signal.SIGINT)
    assert code == 0, err
    assert "Traceback" not in err
    stop = game.wait_line(r"^ACRES_SENSOR_STREAM_STOP agent=polaris queued_mb=\d+\.\d hello=1/0\.0MB/drop0 "
                          r"clock=\d+/[\d.]+MB/drop0 ins=\d+/[\d.]+MB/drop0 lidar=\d+/[\d.]+MB/drop\d+ "
                          r"camera=\d+/[\d.]+MB/drop\d+$")
    assert _stats(stop.string)["lidar"][2] >= s2["lidar"][2]


def test_reconnect_new_hello_and_second_client_waits(start_game):
    game = start_game("--port", "0", "--vehicle", "maxxum")
    port = game.stream_port("maxxum")
    first = Client(port)
    header, payload = first.read()
    assert header.frame_type == FrameType.HELLO and header.sequence == 0 and header.stamp == 0.0
    assert parse_hello(payload).agent == "maxxum"
    for _ in range(30):
        header, _ = first.read()
    last = header.sequence
    game.wait_line(r"^ACRES_SENSOR_STREAM_CONNECTED agent=maxxum port=\d+ send_buffer=\d+$")
    # A second client gets through the handshake (listen queue) but no data while the first is on.
    second = Client(port)
    second.sock.settimeout(0.5)
    with pytest.raises(socket.timeout):
        second.sock.recv(1)
    second.sock.settimeout(TIMEOUT_S)
    first.close()
    header, payload = second.read()
    assert header.frame_type == FrameType.HELLO
    assert header.sequence > last  # the sequence continues across connections
    assert header.stamp == 0.0
    assert parse_hello(payload).vehicle == "maxxum"
    following, _ = second.read()
    assert following.sequence == header.sequence + 1
    game.wait_line(r"^ACRES_SENSOR_STREAM_DISCONNECTED agent=maxxum port=\d+ reason=peer closed "
                   r"queued_mb=\d+\.\d hello=1/0\.0MB/drop0 clock=\d+")
    connected = game.wait_line(r"CONNECTED agent=maxxum .*", start=0)
    assert connected
    deadline = time.monotonic() + TIMEOUT_S
    while sum("_CONNECTED agent=maxxum" in line for line in game.lines) < 2:
        assert time.monotonic() < deadline, game.lines
        time.sleep(0.05)
    second.close()
    code, err = game.stop()
    assert code == 0, err


def test_port_in_use_listen_failed_other_agent_goes_on(start_game):
    busy = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    busy_port = busy.getsockname()[1]
    try:
        game = start_game("--ports", f"{busy_port},0", "--vehicles", "polaris,maxxum")
        game.wait_line(rf"^ACRES_SENSOR_STREAM_LISTEN_FAILED agent=polaris port={busy_port}$")
        client = Client(game.stream_port("maxxum"))
        _, payload = client.read()
        assert parse_hello(payload).agent == "maxxum"
        kinds = {client.read()[0].frame_type for _ in range(30)}
        assert FrameType.CLOCK in kinds and FrameType.INS in kinds
        client.close()
        code, err = game.stop()
        assert code == 0, err
        assert not any("agent=polaris" in line and "LISTENING" in line for line in game.lines)
        game.wait_line(r"^ACRES_SENSOR_STREAM_STOP agent=maxxum ")
    finally:
        busy.close()


def test_ins_payload_is_forty_doubles_with_truth(start_game):
    """INS frames are the protocol page's 40 float64 values; the Clock payload is the vehicle time."""
    game = start_game("--port", "0", "--vehicle", "maxxum", "--no-georeference")
    client = Client(game.stream_port("maxxum"))
    hello = parse_hello(client.read()[1])
    assert hello.georeferenced is False
    while True:
        header, payload = client.read()
        if header.frame_type == FrameType.INS:
            break
    values = decode_ins(payload)
    assert values.shape == (40,)
    assert np.isnan(values[0]) and np.isnan(values[16])  # no geographic reference
    assert np.all(np.isfinite(values[32:40]))  # the truth is always there
    client.close()
    assert game.stop()[0] == 0


def test_bad_arguments_are_refused():
    out = subprocess.run([sys.executable, "-m", "acres_sim.fake_game", "--ports", "0,0",
                          "--vehicles", "polaris"], cwd=REPO, capture_output=True, text=True,
                         timeout=TIMEOUT_S, check=False)
    assert out.returncode == 2
    assert "one vehicle per port" in out.stderr
    out = subprocess.run([sys.executable, "-m", "acres_sim.fake_game", "--lockstep"], cwd=REPO,
                         capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    assert out.returncode == 2 and "--control-port" in out.stderr


def test_the_sensors_a_run_carries_are_the_only_ones_in_the_hello_and_the_stream(start_game):
    """--sensors lidar (a learner that observes the LiDAR alone): the Polaris's Hello says its camera
    and INS are off, and two seconds of world time bring clocks and clouds, no image and no INS
    epoch; an unknown sensor is refused."""
    game = start_game("--port", "0", "--vehicle", "polaris", "--realtime-factor", "0", "--sensors", "lidar")
    client = Client(game.stream_port("polaris"))
    header, payload = client.read()
    assert header.frame_type == FrameType.HELLO
    hello = parse_hello(payload)
    assert hello.lidar.enabled and not hello.camera.enabled and not hello.ins.enabled
    kinds: dict[FrameType, int] = {}
    first_clock = None
    while True:
        header, _payload = client.read()
        kinds[header.frame_type] = kinds.get(header.frame_type, 0) + 1
        if header.frame_type == FrameType.CLOCK:
            first_clock = header.stamp if first_clock is None else first_clock
            if header.stamp >= first_clock + 2.0:
                break
    client.close()
    assert kinds.get(FrameType.LIDAR, 0) >= 15
    assert FrameType.CAMERA not in kinds and FrameType.INS not in kinds
    code, err = game.stop()
    assert code == 0, err
    out = subprocess.run([sys.executable, "-m", "acres_sim.fake_game", "--sensors", "lidar,radar"], cwd=REPO,
                         capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    assert out.returncode == 2 and "sensors must be some of lidar, camera, ins" in out.stderr


def test_duration_ends_the_run(start_game):
    """--duration-s: the run ends by itself at that world time, with STOP lines and exit code 0."""
    game = start_game("--ports", "0,0", "--vehicles", "maxxum,polaris", "--agents", "a1,a2",
                      "--realtime-factor", "0", "--duration-s", "2")
    code, err = game.wait()
    assert code == 0, err
    game.wait_line(r"^ACRES_SENSOR_STREAM_STOP agent=a1 queued_mb=0\.0 hello=0/")
    game.wait_line(r"^ACRES_SENSOR_STREAM_STOP agent=a2 ")
