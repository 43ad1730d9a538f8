"""Large-message delivery to a second process with default DDS settings (test_dds_large and
bench_bridge): fake_game -> a recording TCP proxy -> sim_bridge -> a counting subscriber."""

from __future__ import annotations

import json
import socket
import sys
import threading
import time

import numpy as np

from acres_sim.stream import protocol
from acres_sim.convert.stamps import stamp_to_sec_nanosec
from acres_sim.stream.protocol import FrameHeader, FrameType
from harness.graph import free_port
from harness.processes import Proc, ros_env, start_bridge, start_module
from harness.workload import process_cpu_s


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
    game = start_module("acres_sim.fake_game", ["--port", str(port), "--vehicle", vehicle, "--cached",
                                                "--stats-period-s", "60"], domain_id)
    proxy = bridge = sub = None
    try:
        game.wait_for(f"ACRES_SENSOR_STREAM_LISTENING agent={vehicle}", 60)
        proxy = RecordingProxy(port)
        bridge_env = {"ACRES_SIM_DDS_PROFILE": profile} if profile else {}
        bridge = start_bridge(proxy.port, domain_id, {"stats_period_s": 0.0}, namespace=f"/{vehicle}",
                              env_extra=bridge_env)
        bridge.wait_for("DDS profile", 30)
        sub_env = ros_env(domain_id)
        for variable in ("FASTDDS_DEFAULT_PROFILES_FILE", "FASTRTPS_DEFAULT_PROFILES_FILE",
                         "FASTDDS_BUILTIN_TRANSPORTS", "ACRES_SIM_DDS_PROFILE"):
            sub_env.pop(variable, None)
        sub = Proc([sys.executable, "-c", _COUNTING_SUBSCRIBER, f"/{vehicle}", str(seconds)], sub_env)
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
