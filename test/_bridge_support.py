"""Helpers shared by the sim_bridge tests: free ports, example Hellos, a scripted TSS1 server, a recording
TCP proxy, and starting sim_bridge / fake_game as subprocesses on an isolated ROS graph (through the
benchmark's child-process wrapper, the one both use)."""

from __future__ import annotations

import json
import os
import select
import socket
import sys
import threading
import time
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from page_examples import POLARIS_HELLO_JSON

from acres_sim import protocol
from acres_sim.convert import stamp_to_sec_nanosec
from acres_sim.protocol import FrameHeader, FrameType
from benchmark.processes import Proc as Process  # the one child-process wrapper
from benchmark.workload import process_cpu_s

REPO = Path(__file__).resolve().parent.parent


def small_hello_json(agent: str = "tiny", camera: bool = True) -> dict:
    """A Polaris-like Hello with a small cloud and image, for fast scripted streams."""
    doc = json.loads(POLARIS_HELLO_JSON)
    doc["agent"] = agent
    doc["lidar"].update(columns=16, rings=4)
    doc["camera"].update(width=8, height=6, enabled=camera)
    return doc


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def frame(kind: int, seq: int, stamp: float, payload: bytes, publish: float | None = None) -> bytes:
    return protocol.encode_frame(kind, seq, stamp, time.monotonic() if publish is None else publish, payload)


def ins_values(t: float, georeferenced: bool = True) -> np.ndarray:
    """Plausible INS values at time t (a slow drive east); distinct per t so messages can be matched."""
    v = np.zeros(protocol.INS_FIELDS)
    v[protocol.Ins.UtmE], v[protocol.Ins.UtmN], v[protocol.Ins.UtmH] = 500000.0 + t, 4480000.0, 181.0
    v[protocol.Ins.UtmQw] = 1.0
    v[protocol.Ins.VelX] = 1.0
    v[protocol.Ins.AccelZ] = 9.81
    v[protocol.Ins.Lat], v[protocol.Ins.Lon], v[protocol.Ins.Height] = 40.47, -86.99, 181.0
    v[protocol.Ins.CovE:protocol.Ins.CovU + 1] = (0.01, 0.02, 0.03)
    v[protocol.Ins.EnuQw] = 1.0
    v[protocol.Ins.EnuX], v[protocol.Ins.EnuY], v[protocol.Ins.EnuZ] = t, 2.0, 0.0
    v[protocol.Ins.FixStatus] = 2.0
    v[protocol.Ins.UtmZone] = 16.0
    v[protocol.Ins.TruthQw] = 1.0
    v[protocol.Ins.TruthEnuX] = t
    v[protocol.Ins.TruthSpeed] = 1.0
    if not georeferenced:
        v[list(protocol.INS_GEO_FIELDS)] = np.nan
        v[protocol.Ins.FixStatus] = -1.0
    return v


def scripted_stream(hello_json: dict, seconds: float, start_seq: int = 0, t0: float = 0.0,
                    with_barriers: bool = False) -> list[bytes]:
    """Frames of a small session: Hello, then per 1/120 s a clock, INS at ~100 Hz, cloud/image at 10 Hz."""
    hello = protocol.parse_hello(json.dumps(hello_json).encode())
    out = [frame(FrameType.HELLO, start_seq, 0.0, protocol.encode_hello(hello))]
    seq = start_seq + 1
    rng = np.random.default_rng(7)
    next_ins = 0.0
    for step in range(1, int(seconds * 120) + 1):
        t = t0 + step / 120.0
        out.append(frame(FrameType.CLOCK, seq, t, protocol.encode_clock(t - 1.5)))
        seq += 1
        if t >= next_ins - 1e-9:
            out.append(frame(FrameType.INS, seq, t, protocol.encode_ins(ins_values(t))))
            seq += 1
            next_ins += 0.01
        if step % 12 == 0:
            if hello.lidar.enabled:
                pts = rng.normal(size=(hello.lidar.columns, hello.lidar.rings, 4)).astype(np.float32)
                pts[0, 0, :3] = np.nan
                out.append(frame(FrameType.LIDAR, seq, t, protocol.encode_lidar(pts)))
                seq += 1
            if hello.camera.enabled:
                img = rng.integers(0, 255, size=(hello.camera.height, hello.camera.width, 3), dtype=np.uint8)
                out.append(frame(FrameType.CAMERA, seq, t, protocol.encode_camera(img)))
                seq += 1
            if with_barriers:
                out.append(frame(FrameType.BARRIER, seq, t, protocol.encode_barrier(step)))
                seq += 1
    return out


GATE = None  # in a script: wait here until ScriptedServer.gate is set
CLOSE = object()  # in a script: close this connection now (whatever `hold` says)


class ScriptedServer:
    """A TSS1 server on 127.0.0.1 that serves one scripted list of byte chunks per connection.

    `scripts` is a list (one entry per accepted connection, the last one repeats) of lists of
    bytes (GATE entries wait for `gate`; a float entry waits until that many seconds after the
    script or its last GATE started, for paced streams); after the script the connection stays
    open (hold=True) or is closed. A callable entry is called with the connection (to stamp
    frames with the time they are sent)."""

    def __init__(self, scripts: list[list], hold: bool = True, pace_s: float = 0.0, port: int = 0):
        self.gate = threading.Event()
        self.done = threading.Event()
        self.scripts = scripts
        self.hold = hold
        self.pace_s = pace_s
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.sock.listen(4)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._clients: list[socket.socket] = []
        self._thread.start()

    def _run(self) -> None:
        self.sock.settimeout(0.1)
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self._clients.append(conn)
            script = self.scripts[min(self.connections, len(self.scripts) - 1)]
            self.connections += 1
            try:
                start = time.monotonic()
                closing = False
                for chunk in script:
                    if chunk is CLOSE:
                        closing = True
                        break
                    if chunk is GATE:
                        while not self.gate.wait(0.1) and not self._stop.is_set():
                            pass
                        start = time.monotonic()
                        continue
                    if isinstance(chunk, float):
                        time.sleep(max(0.0, start + chunk - time.monotonic()))
                        continue
                    if callable(chunk):
                        chunk(conn)
                        continue
                    conn.sendall(chunk)
                    if self.pace_s:
                        time.sleep(self.pace_s)
                self.done.set()
                if self.hold and not closing:
                    while not self._stop.is_set():
                        r, _, _ = select.select([conn], [], [], 0.1)
                        if r and not conn.recv(1):
                            break
            except OSError:
                pass
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self.sock.close()
        for c in self._clients:
            c.close()


class RecordingProxy:
    """A real TCP proxy: accepts one client at a time, connects it to upstream, forwards the upstream
    bytes unchanged and records them (per connection)."""

    def __init__(self, upstream_port: int):
        self.upstream_port = upstream_port
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1)
        self.port = self.sock.getsockname()[1]
        self.recordings: list[bytearray] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        self.sock.settimeout(0.1)
        while not self._stop.is_set():
            try:
                client, _ = self.sock.accept()
            except OSError:
                continue
            try:
                up = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=5)
            except OSError:
                client.close()
                continue
            record = bytearray()
            with self._lock:
                self.recordings.append(record)
            up.settimeout(0.1)
            try:
                while not self._stop.is_set():
                    try:
                        data = up.recv(1 << 20)
                    except TimeoutError:
                        continue
                    if not data:
                        break
                    with self._lock:
                        record += data
                    client.sendall(data)
            except OSError:
                pass
            up.close()
            client.close()

    def frames(self, connection: int = -1) -> list[tuple[FrameHeader, bytes]]:
        with self._lock:
            data = bytes(self.recordings[connection]) if self.recordings else b""
        return parse_frames(data)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self.sock.close()


def parse_frames(data: bytes) -> list[tuple[FrameHeader, bytes]]:
    """Every whole frame of a recorded byte stream (a partial last frame is left out)."""
    out = []
    at = 0
    while at + protocol.HEADER_SIZE <= len(data):
        header = protocol.parse_header(data[at:at + protocol.HEADER_SIZE])
        end = at + protocol.HEADER_SIZE + header.payload_size
        if end > len(data):
            break
        out.append((header, data[at + protocol.HEADER_SIZE:end]))
        at = end
    return out


def ros_env(domain_id: int, **extra: str | None) -> dict[str, str]:
    """This environment on an isolated graph, with `extra` set (None: removed)."""
    env = dict(os.environ)
    env["ROS_DOMAIN_ID"] = str(domain_id)
    env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env["PYTHONUNBUFFERED"] = "1"
    env["RCUTILS_LOGGING_BUFFERED_STREAM"] = "0"
    for key, value in extra.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def start_bridge(port: int, domain_id: int, params: Iterable[str] = (), env_extra: dict | None = None,
                 name: str = "sim_bridge", namespace: str | None = None) -> Process:
    args = [sys.executable, "-m", "acres_sim.bridge", "--ros-args", "-p", f"port:={port}",
            "-p", "reconnect_min_s:=0.1", "-p", "reconnect_max_s:=0.5"]
    for p in params:
        args += ["-p", p]
    if namespace:
        args += ["-r", f"__ns:={namespace}"]
    if name != "sim_bridge":
        args += ["-r", f"__node:={name}"]
    return Process(args, ros_env(domain_id, **(env_extra or {})))


def start_fake_game(args: list[str], domain_id: int) -> Process:
    return Process([sys.executable, "-m", "acres_sim.fake_game", *args], ros_env(domain_id))


class Graph:
    """The test's own rclpy participant on an isolated domain: subscriptions that collect messages."""

    def __init__(self, domain_id: int):
        import rclpy
        from rclpy.executors import SingleThreadedExecutor

        os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=domain_id)
        self.node = rclpy.create_node(f"bridge_test_{os.getpid()}", context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.received: dict[str, list] = {}
        self.subscriptions: dict[str, object] = {}

    def subscribe(self, msg_type, topic: str, qos=None, callback=None) -> list:
        from rclpy.qos import QoSProfile

        got: list = []
        self.received[topic] = got

        def on_message(msg) -> None:
            got.append((time.monotonic(), msg))
            if callback is not None:
                callback(msg)

        self.subscriptions[topic] = self.node.create_subscription(
            msg_type, topic, on_message, qos if qos is not None else QoSProfile(depth=1000))
        return got

    def spin_until(self, predicate, timeout_s: float = 15.0, what: str = "condition") -> None:
        deadline = time.monotonic() + timeout_s
        while not predicate():
            if time.monotonic() > deadline:
                counts = {t: len(v) for t, v in self.received.items()}
                raise AssertionError(f"{what} not reached within {timeout_s} s; received {counts}")
            self.executor.spin_once(timeout_sec=0.05)

    def spin_for(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.executor.spin_once(timeout_sec=0.05)

    def wait_matched(self, topics: Iterable[str], timeout_s: float = 15.0, settle_s: float = 1.0) -> None:
        """Until every subscription has matched a publisher, then `settle_s` more: matching is
        not symmetric, the publisher's side may match our reader a moment later."""
        topics = list(topics)
        self.spin_until(lambda: all(self.subscriptions[t].get_publisher_count() > 0 for t in topics),
                        timeout_s, f"publishers for {topics}")
        self.spin_for(settle_s)

    def messages(self, topic: str) -> list:
        return [m for _, m in self.received[topic]]

    def close(self) -> None:
        import rclpy

        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.shutdown(context=self.context)


# ---------------------------------------------------------------------------------------------
# Large-message delivery to a second process with default DDS settings (test_dds_large, benchmark)

_COUNTING_SUBSCRIBER = r"""
import json, sys, time
import rclpy
from rclpy.qos import QoSProfile
from sensor_msgs.msg import Image, PointCloud2
ns, seconds = sys.argv[1], float(sys.argv[2])
rclpy.init()
node = rclpy.create_node("large_counter")
got = {"lidar": [], "camera": []}
def keep(kind):
    return lambda m: got[kind].append(
        (m.header.stamp.sec, m.header.stamp.nanosec, time.monotonic(), len(m.data)))
subs = [node.create_subscription(PointCloud2, ns + "/lidar/points", keep("lidar"), QoSProfile(depth=10)),
        node.create_subscription(Image, ns + "/camera/image_raw", keep("camera"), QoSProfile(depth=10))]
while not all(s.get_publisher_count() for s in subs):
    rclpy.spin_once(node, timeout_sec=0.05)
matched = time.monotonic()
print("MATCHED", flush=True)
end = matched + seconds
while time.monotonic() < end:
    rclpy.spin_once(node, timeout_sec=0.05)
print("RESULT " + json.dumps({"matched": matched, "got": got}), flush=True)
"""


def measure_large_delivery(domain_id: int, seconds: float = 5.0, profile: str | None = None,
                           vehicle: str = "polaris") -> dict:
    """fake_game (--cached) -> recording proxy -> sim_bridge -> a subscriber process with DEFAULT DDS
    settings. Returns per type: sent (after the subscriber matched), received, missing, latency
    (game publish time to subscriber receipt) p50/p99 ms; and the bridge's CPU share.
    `profile`: None = the bridge's default behaviour, "off" = no profile, or a file."""
    port = free_port()
    game = start_fake_game(["--port", str(port), "--vehicle", vehicle, "--cached", "--stats-period-s", "60"],
                           domain_id)
    proxy = bridge = sub = None
    try:
        game.wait_for(f"ACRES_SENSOR_STREAM_LISTENING agent={vehicle}", 60)
        proxy = RecordingProxy(port)
        bridge_env = {"ACRES_SIM_DDS_PROFILE": profile} if profile else {}
        bridge = start_bridge(proxy.port, domain_id, ["stats_period_s:=0.0"], env_extra=bridge_env,
                              namespace=f"/{vehicle}")
        bridge.wait_for("DDS profile", 30)
        sub_env = ros_env(domain_id)
        for variable in ("FASTDDS_DEFAULT_PROFILES_FILE", "FASTRTPS_DEFAULT_PROFILES_FILE",
                         "FASTDDS_BUILTIN_TRANSPORTS", "ACRES_SIM_DDS_PROFILE"):
            sub_env.pop(variable, None)
        sub = Process([sys.executable, "-c", _COUNTING_SUBSCRIBER, f"/{vehicle}", str(seconds)], sub_env)
        sub.wait_for("MATCHED", 60)
        cpu0, t0 = process_cpu_s(bridge.proc.pid), time.monotonic()
        line = sub.wait_for("RESULT ", seconds + 60)
        cpu1, t1 = process_cpu_s(bridge.proc.pid), time.monotonic()
        result = json.loads(line.split("RESULT ", 1)[1])
        frames = proxy.frames(0)
        profile_line = next((x for x in bridge.lines if "DDS profile" in x), "")
    finally:
        for p in (sub, bridge):
            if p is not None:
                p.stop()
        if proxy is not None:
            proxy.close()
        game.stop()
    out: dict = {"bridge_cpu_percent": 100.0 * (cpu1 - cpu0) / (t1 - t0), "profile": profile_line}
    matched = result["matched"]
    for kind, frame_type in (("lidar", FrameType.LIDAR), ("camera", FrameType.CAMERA)):
        publish = {stamp_to_sec_nanosec(h.stamp): h.publish_time for h, _ in frames if h.type == frame_type}
        got = {(s, ns): (t, n) for s, ns, t, n in result["got"][kind]}
        # frames the game queued after the subscriber matched and at least 0.5 s before it stopped
        window = {k for k, t in publish.items() if matched + 0.2 <= t <= matched + seconds - 0.5}
        latencies = np.array([(got[k][0] - publish[k]) * 1e3 for k in got if k in publish])
        out[kind] = {
            "sent": len(window),
            "received": len(window & set(got)),
            "missing": len(window - set(got)),
            "rate_hz": len(got) / seconds,
            "p50_ms": float(np.percentile(latencies, 50)) if latencies.size else float("nan"),
            "p99_ms": float(np.percentile(latencies, 99)) if latencies.size else float("nan"),
        }
    return out
