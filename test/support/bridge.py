"""Helpers of the sim_bridge tests: example Hellos, scripted streams, a scripted TSS1 server, and
starting sim_bridge / fake_game as the tests do. What the benchmark scripts use too (the graph, the
recording proxy, the child-process wrapper) lives in the uninstalled benchmark package and is
re-exported here."""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from support.page_examples import POLARIS_HELLO_JSON

from acres_sim.stream import protocol
from acres_sim.stream.hello import encode_hello, parse_hello
from acres_sim.stream.protocol import FrameType
from harness import processes
from harness.delivery import RecordingProxy, measure_large_delivery, parse_frames  # noqa: F401
from harness.graph import Graph, free_port, free_ports  # noqa: F401
from harness.processes import Proc as Process  # the one child-process wrapper
from harness.processes import ros_env  # noqa: F401
from harness.workload import ins_values  # noqa: F401

REPO = Path(__file__).resolve().parents[2]


def small_hello_json(agent: str = "tiny", camera: bool = True) -> dict:
    """A Polaris-like Hello with a small cloud and image, for fast scripted streams."""
    doc = json.loads(POLARIS_HELLO_JSON)
    doc["agent"] = agent
    doc["lidar"].update(columns=16, rings=4)
    doc["camera"].update(width=8, height=6, enabled=camera)
    return doc


def frame(kind: int, seq: int, stamp: float, payload: bytes, publish: float | None = None) -> bytes:
    return protocol.encode_frame(kind, seq, stamp, time.monotonic() if publish is None else publish, payload)


def scripted_stream(hello_json: dict, seconds: float, start_seq: int = 0, t0: float = 0.0,
                    with_barriers: bool = False) -> list[bytes]:
    """Frames of a small session: Hello, then per 1/120 s a clock, INS at ~100 Hz, cloud/image at 10 Hz."""
    hello = parse_hello(json.dumps(hello_json).encode())
    out = [frame(FrameType.HELLO, start_seq, 0.0, encode_hello(hello))]
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


def start_bridge(port: int, domain_id: int, params: Iterable[str] = (), env_extra: dict | None = None,
                 name: str = "sim_bridge", namespace: str | None = None) -> Process:
    """sim_bridge as the tests start it: reconnecting fast."""
    return processes.start_bridge(port, domain_id, ["reconnect_min_s:=0.1", "reconnect_max_s:=0.5", *params],
                                  namespace, env_extra, name)


def start_fake_game(args: list[str], domain_id: int) -> Process:
    return processes.start_module("acres_sim.fake_game", args, domain_id)


def call_service(graph: Graph, client, timeout_s: float, resend_every_s: float | None = None, **fields):
    """One service call from the test's graph, waited for while the graph spins.

    resend_every_s, for a request that may be made twice (a read, a refused set): the request again
    while no answer came. A ready service (its request topic matched) may still lose the reply when
    the server's reply writer has not yet matched the client's reader, which a loaded machine shows."""
    request = client.srv_type.Request()
    for key, value in fields.items():
        setattr(request, key, value)
    deadline = time.monotonic() + timeout_s
    while True:
        future = client.call_async(request)
        left = deadline - time.monotonic()
        wait = left if resend_every_s is None else min(left, resend_every_s)
        if graph.spin_while_not(future.done, wait):
            return future.result()
        client.remove_pending_request(future)
        if time.monotonic() >= deadline - 1e-3:
            raise AssertionError(f"no answer of {client.srv_name} within {timeout_s} s")
