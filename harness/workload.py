"""The served stream of the benchmark, the raw reader that drains it, and CPU from /proc (ROS-free).

One second of a Polaris stream (clock, INS, LiDAR, camera, at the layout's rates) is built once
from the fake world. ReplayServer serves it on 127.0.0.1 again and again with increasing stamps
and sequence numbers: paced (rate 1 = real time, every frame stamped with its publish time and
logged) or as fast as the socket takes it (one sendall per second of stream: the server costs
almost nothing, so the reader is what is measured).
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from acres_sim.scenario.stack_quiet import cpu_ns, threads
from acres_sim.stream import protocol
from acres_sim.stream.hello import Hello, encode_hello
from acres_sim.stream.protocol import HEADER, HEADER_SIZE, FrameType
from acres_sim.stream.timing import PHYSICS_HZ

_SEND_BUFFER = 16 << 20
# header fields after magic/type/flags: sequence, payload size, stamp, publish time
_PATCH = struct.Struct("<IIdd")
_PATCH_OFFSET = 8


def process_cpu_s(pid: int) -> float:
    """CPU seconds a process has run, all its threads (acres_sim.scenario.stack_quiet reads them)."""
    tasks = threads(pid)
    if not tasks:
        raise ProcessLookupError(f"no process {pid}")
    return cpu_ns(tasks) / 1e9


@dataclass(frozen=True)
class Period:
    """One period of a stream: frames (type, stamp within the period, payload) in send order."""

    hello: Hello
    seconds: float
    frames: tuple[tuple[int, float, bytes], ...]

    @property
    def payload_bytes(self) -> int:
        return sum(HEADER_SIZE + len(p) for _k, _t, p in self.frames)

    def count(self, kind: int) -> int:
        return sum(1 for k, _t, _p in self.frames if k == kind)


def polaris_period(seconds: int = 1, seed: int = 42, renders: int = 2) -> Period:
    """`seconds` of the Polaris stream as the fake game sends it (the first `renders` clouds and
    images rendered from the fake world, then served again in turn, as fake_game --cached)."""
    from acres_sim.fake_game.simulation.world_clock import due_step
    from acres_sim.fake_game.simulation.simulation import AgentSimulator
    from acres_sim.fake_game.simulation.vehicles import vehicle_hello

    hello = vehicle_hello("polaris")
    sim = AgentSimulator(hello, seed=seed)
    sim.prepare()
    clouds = [protocol.encode_lidar(sim.lidar_points(k / hello.lidar.hz)) for k in range(1, renders + 1)]
    images = [protocol.encode_camera(sim.camera_image(k / hello.camera.hz)) for k in range(1, renders + 1)]

    def steps(hz: float) -> list[int]:
        return [due_step(k, hz) for k in range(1, int(round(hz * seconds)) + 1)]

    ins, lidar, camera = set(steps(hello.ins.hz)), steps(hello.lidar.hz), steps(hello.camera.hz)
    frames: list[tuple[int, float, bytes]] = []
    for step in range(1, PHYSICS_HZ * seconds + 1):
        t = step / float(PHYSICS_HZ)
        frames.append((FrameType.CLOCK, t, protocol.encode_clock(t)))
        if step in ins:
            frames.append((FrameType.INS, t, protocol.encode_ins(sim.ins_values(t))))
        if step in lidar:
            frames.append((FrameType.LIDAR, t, clouds[lidar.index(step) % renders]))
        if step in camera:
            frames.append((FrameType.CAMERA, t, images[camera.index(step) % renders]))
    return Period(hello, float(seconds), tuple(frames))


@dataclass
class SentLog:
    """What a paced sender published: (frame type, stamp, publish time = CLOCK_MONOTONIC)."""

    frames: list[tuple[int, float, float]] = field(default_factory=list)


class ReplayServer:
    """Serves a Period to one client: the Hello, then the period again and again.

    rate > 0: paced, `rate` stream seconds per second, publish time stamped at send (logged);
    rate == 0: as fast as the client reads. Stamps go on from period to period, sequence numbers
    never skip, so the stream is valid to the letter however long it runs.
    """

    def __init__(self, period: Period, rate: float = 1.0):
        self.period = period
        self.rate = float(rate)
        self.sent = SentLog()
        self.bytes_sent = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._stop = threading.Event()
        self.connected = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"replay-{self.port}", daemon=True)

    def start(self) -> ReplayServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        try:
            self._listener.close()
        except OSError:
            pass
        self._thread.join(3.0)

    def _run(self) -> None:
        self._listener.settimeout(0.2)
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except (TimeoutError, OSError):
                continue
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, _SEND_BUFFER)
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.connected.set()
            try:
                if self.rate > 0:
                    self._serve_paced(conn)
                else:
                    self._serve_flat_out(conn)
            except OSError:
                pass  # the client went away: wait for the next one
            finally:
                conn.close()
            return

    def _hello(self, conn: socket.socket) -> int:
        payload = encode_hello(self.period.hello)
        conn.sendall(protocol.encode_frame(FrameType.HELLO, 0, 0.0, time.monotonic(), payload))
        return 1

    def _serve_paced(self, conn: socket.socket) -> None:
        sequence = self._hello(conn)
        t0 = time.monotonic() + 0.05
        log = self.sent.frames
        loop = 0
        while not self._stop.is_set():
            base = loop * self.period.seconds
            last_stamp = -1.0
            for kind, offset, payload in self.period.frames:
                stamp = base + offset
                if stamp != last_stamp:  # one wait per physics step
                    delay = t0 + stamp / self.rate - time.monotonic()
                    if delay > 0:
                        time.sleep(delay)
                    last_stamp = stamp
                    if self._stop.is_set():
                        return
                now = time.monotonic()
                head = protocol.pack_header(kind, sequence, len(payload), stamp, now)
                if len(payload) <= 4096:
                    conn.sendall(head + payload)
                else:
                    conn.sendall(head)
                    conn.sendall(payload)
                log.append((kind, stamp, now))
                self.bytes_sent += HEADER_SIZE + len(payload)
                sequence += 1
            loop += 1

    def _serve_flat_out(self, conn: socket.socket) -> None:
        sequence = self._hello(conn)
        frames = self.period.frames
        blob = bytearray(self.period.payload_bytes)
        offsets = []
        at = 0
        for kind, _offset, payload in frames:
            blob[at:at + HEADER_SIZE] = protocol.pack_header(kind, 0, len(payload), 0.0, 0.0)
            blob[at + HEADER_SIZE:at + HEADER_SIZE + len(payload)] = payload
            offsets.append(at)
            at += HEADER_SIZE + len(payload)
        view = memoryview(blob)
        loop = 0
        while not self._stop.is_set():
            base, now = loop * self.period.seconds, time.monotonic()
            for (_kind, offset, payload), at in zip(frames, offsets):
                _PATCH.pack_into(blob, at + _PATCH_OFFSET, sequence & 0xFFFFFFFF, len(payload),
                                 base + offset, now)
                sequence += 1
            conn.sendall(view)  # returns once the kernel holds it all: patching again is safe
            self.bytes_sent += len(blob)
            loop += 1


class FrameDrain:
    """The optimal client: each frame's header and payload go into two reusable buffers with
    recv_into (MSG_WAITALL), nothing else. next() -> (frame type, payload size, stamp, publish time)."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self._header = memoryview(bytearray(HEADER_SIZE))
        self._payload = memoryview(bytearray(8 << 20))

    def _fill(self, view: memoryview) -> None:
        got, need = 0, len(view)
        while got < need:
            n = self.sock.recv_into(view[got:], need - got, socket.MSG_WAITALL)
            if n == 0:
                raise ConnectionResetError("the stream closed")
            got += n

    def next(self) -> tuple[int, int, float, float]:
        self._fill(self._header)
        _magic, kind, _flags, _seq, size, stamp, published = HEADER.unpack(self._header)
        if size:
            self._fill(self._payload[:size])
        return kind, size, stamp, published


def connect_drain(port: int) -> FrameDrain:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, _SEND_BUFFER)
    return FrameDrain(sock)


def raw_drain(port: int, seconds: float, warmup_s: float = 0.5) -> float:
    """MB/s of an optimal reader (FrameDrain) draining the server flat out, after `warmup_s`."""
    drain = connect_drain(port)
    try:
        start = time.monotonic() + warmup_s
        end = start + seconds
        counted = 0
        counting = False
        while True:
            _kind, size, _stamp, _published = drain.next()
            now = time.monotonic()
            if counting:
                counted += HEADER_SIZE + size
                if now >= end:
                    return counted / (now - start) / 1e6
            elif now >= start:
                counting, start, end = True, now, now + seconds
    finally:
        drain.sock.close()


assert HEADER.size == HEADER_SIZE


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
