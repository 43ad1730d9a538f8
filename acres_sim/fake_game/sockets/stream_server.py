"""One agent's sensor stream: the game side of the TSS1 transport, ROS-free.

A StreamServer listens on 127.0.0.1, serves one client at a time (the next one waits in the
listen queue until the current one is gone), sends the Hello first on every connection, and
queues frames only while a client is connected. Its own sender thread writes the queue to the
socket, so the simulation thread that calls publish() never blocks on a slow client: above
max_queued_bytes LiDAR and camera frames are dropped, above twice that every frame is dropped,
each drop counted per type (the protocol page's "Flow Control and Drops" table). The log lines are
the protocol page's ACRES_SENSOR_STREAM_* lines, one line each.
"""

from __future__ import annotations

import errno
import select
import socket
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from acres_sim.fake_game.simulation.session_config import DEFAULT_MAX_QUEUED_BYTES, SessionConfig
from acres_sim.fake_game.simulation.sinks import LogFn, OpenStream, stdout_log
from acres_sim.fake_game.sockets.loopback_server import LoopbackServer
from acres_sim.stream.protocol import FrameType, pack_header
from acres_sim.stream.hello import Hello, encode_hello

SEND_BUFFER_REQUEST = 16 << 20  # the game asks the kernel for 16 MiB; we report what it granted
LISTEN_BACKLOG = 4  # later clients wait here until the current one disconnects
_POLL_S = 0.1  # how often an idle or blocked sender looks at stop, stats and the peer
_MIB = float(1 << 20)
# Frames of at most this many payload bytes go out as one buffer with their header.
_SMALL_PAYLOAD = 4096
_STATS_TYPES = (FrameType.HELLO, FrameType.CLOCK, FrameType.INS, FrameType.LIDAR, FrameType.CAMERA)
_HEAVY_TYPES = frozenset((FrameType.LIDAR, FrameType.CAMERA))
_PEER_GONE_ERRNOS = frozenset((errno.EPIPE, errno.ECONNRESET, errno.ECONNABORTED, errno.ENOTCONN))


@dataclass
class TypeCounter:
    """Frames and bytes (header included) queued, and frames dropped, of one frame type."""

    frames: int = 0
    bytes: int = 0
    drops: int = 0

    def text(self) -> str:
        return f"{self.frames}/{self.bytes / _MIB:.1f}MB/drop{self.drops}"


class _PeerClosed(Exception):
    pass


class _Stopping(Exception):
    pass


class StreamServer(LoopbackServer):
    """The sensor stream of one agent.

    publish() may be called from any thread. With flavor "core" the Hello has sequence 0 and
    the world time as its stamp (ACRES Core); then the data frames are numbered from 1 so that
    no data frame shares the Hello's number.
    """

    def __init__(self, agent: str, port: int, hello: Hello, *, flavor: str = "game",
                 max_queued_bytes: int = DEFAULT_MAX_QUEUED_BYTES,
                 stats_period_s: float = SessionConfig.stats_period_s,
                 log: LogFn = stdout_log, world_time: Callable[[], float] = lambda: 0.0):
        if flavor not in ("game", "core"):
            raise ValueError(f"flavor must be game or core, got {flavor!r}")
        if max_queued_bytes <= 0:
            raise ValueError(f"max_queued_bytes must be positive, got {max_queued_bytes}")
        super().__init__(port, label="SENSOR_STREAM", tags=f"agent={agent}", backlog=LISTEN_BACKLOG, log=log)
        self.agent = agent
        self.flavor = flavor
        self._hello_payload = encode_hello(hello)
        self._max_queued = int(max_queued_bytes)
        self._stats_period_s = float(stats_period_s)
        self._world_time = world_time

        self._queue: deque[tuple[bytes, bytes | None, int]] = deque()  # (head, payload, size)
        self._queued_bytes = 0  # including the frame the sender is writing
        self._connected = False
        self._sequence = 1 if flavor == "core" else 0
        self._counters = {t: TypeCounter() for t in FrameType}

    # -- lifecycle ----------------------------------------------------------------------------

    def stop(self) -> None:
        """Close the client and the listening socket, then log STOP with the final counters."""
        was_listening = self.listening
        super().stop()
        if was_listening:
            self._log(f"ACRES_SENSOR_STREAM_STOP agent={self.agent} {self.stats_text()}")

    # -- the simulation side ------------------------------------------------------------------

    @property
    def connected(self) -> bool:
        return self._connected

    def would_drop(self, frame_type: FrameType, payload_size: int) -> bool:
        """True when a frame of this size would be dropped now (lets the caller skip a render)."""
        with self._lock:
            return self._connected and self._over_limit(frame_type, 32 + payload_size)

    def count_drop(self, frame_type: FrameType) -> None:
        """Count a frame that was dropped before it was made (its render was skipped)."""
        with self._lock:
            if self._connected:
                self._counters[frame_type].drops += 1

    def publish(self, frame_type: FrameType, stamp: float, payload: bytes) -> bool:
        """Queue one frame; False when there is no client or the flow control dropped it."""
        size = 32 + len(payload)
        with self._lock:
            if not self._connected:
                return False  # no client: no frame, no number, no drop
            counter = self._counters[frame_type]
            if self._over_limit(frame_type, size):
                counter.drops += 1  # a dropped frame gets no sequence number
                return False
            self._enqueue(frame_type, stamp, payload, self._sequence)
            self._sequence += 1
            return True

    def _over_limit(self, frame_type: FrameType, size: int) -> bool:
        total = self._queued_bytes + size
        if total > 2 * self._max_queued:
            return True
        return total > self._max_queued and frame_type in _HEAVY_TYPES

    def _enqueue(self, frame_type: FrameType, stamp: float, payload: bytes, sequence: int) -> None:
        # Caller holds the lock. The publish time is taken when the frame is queued (protocol page).
        head = pack_header(frame_type, sequence, len(payload), stamp, time.monotonic())
        size = len(head) + len(payload)
        if len(payload) <= _SMALL_PAYLOAD:
            self._queue.append((head + payload, None, size))
        else:
            self._queue.append((head, payload, size))
        self._queued_bytes += size
        counter = self._counters[frame_type]
        counter.frames += 1
        counter.bytes += size
        self._lock.notify()

    # -- statistics ---------------------------------------------------------------------------

    def stats_text(self) -> str:
        with self._lock:
            parts = [f"queued_mb={self._queued_bytes / _MIB:.1f}"]
            parts += [f"{t.name.lower()}={self._counters[t].text()}" for t in _STATS_TYPES]
        return " ".join(parts)

    def counters(self) -> dict[FrameType, TypeCounter]:
        """A copy of the per-type counters."""
        with self._lock:
            return {t: TypeCounter(c.frames, c.bytes, c.drops) for t, c in self._counters.items()}

    # -- the sender thread --------------------------------------------------------------------

    def _handle(self, conn: socket.socket) -> None:
        try:
            self._serve(conn)
        finally:
            conn.close()

    def _serve(self, conn: socket.socket) -> None:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER_REQUEST)
        except OSError:
            pass  # the kernel keeps its default; the CONNECTED line reports what we got
        send_buffer = conn.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF)
        conn.setblocking(False)
        poller = select.poll()
        poller.register(conn, select.POLLIN | select.POLLOUT)
        with self._lock:
            self._queue.clear()
            self._queued_bytes = 0
            if self.flavor == "core":
                hello_seq, hello_stamp = 0, float(self._world_time())
            else:
                hello_seq, hello_stamp = self._sequence, 0.0
                self._sequence += 1
            self._connected = True
            self._enqueue(FrameType.HELLO, hello_stamp, self._hello_payload, hello_seq)
            hello = self._queue.popleft()
        self._next_stats = time.monotonic() + self._stats_period_s
        try:
            self._send_item(conn, poller, hello)
        except _Stopping:
            self._disconnect(None)
            return
        except (_PeerClosed, OSError):
            self._disconnect("hello failed")
            return
        self._log(f"ACRES_SENSOR_STREAM_CONNECTED agent={self.agent} port={self.port} "
                  f"send_buffer={send_buffer}")
        try:
            while True:
                with self._lock:
                    if not self._queue and not self._stop.is_set():
                        self._lock.wait(_POLL_S)
                    item = self._queue.popleft() if self._queue else None
                self._housekeeping(conn)
                if item is not None:
                    self._send_item(conn, poller, item)
        except _Stopping:
            self._disconnect(None)
        except _PeerClosed:
            self._disconnect("peer closed")
        except OSError as exc:
            self._disconnect("peer closed" if exc.errno in _PEER_GONE_ERRNOS else "send failed")

    def _send_item(self, conn: socket.socket, poller: select.poll,
                   item: tuple[bytes, bytes | None, int]) -> None:
        head, payload, size = item
        try:
            self._send_all(conn, poller, head)
            if payload is not None:
                self._send_all(conn, poller, payload)
        finally:
            with self._lock:
                self._queued_bytes -= size

    def _send_all(self, conn: socket.socket, poller: select.poll, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                sent = conn.send(view, socket.MSG_NOSIGNAL)
                view = view[sent:]
                continue
            except BlockingIOError:
                pass
            # The client is not keeping up: wait for room, but stay responsive to stop, the
            # stats period and a peer that closes while we wait.
            for _fd, events in poller.poll(_POLL_S * 1000):
                if events & (select.POLLHUP | select.POLLERR):
                    self._check_peer(conn)
                    raise _PeerClosed()
            self._housekeeping(conn)

    def _housekeeping(self, conn: socket.socket) -> None:
        if self._stop.is_set():
            raise _Stopping()
        self._check_peer(conn)
        now = time.monotonic()
        if now >= self._next_stats:
            self._next_stats = now + self._stats_period_s
            self._log(f"ACRES_SENSOR_STREAM_STATS agent={self.agent} {self.stats_text()}")

    @staticmethod
    def _check_peer(conn: socket.socket) -> None:
        """Raise _PeerClosed when the client has closed; discard anything it sent (it sends nothing)."""
        for _ in range(16):  # bounded: a client that floods us cannot keep the sender here
            try:
                data = conn.recv(65536)
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                if exc.errno in _PEER_GONE_ERRNOS:
                    raise _PeerClosed() from None
                raise
            if not data:
                raise _PeerClosed()

    def _disconnect(self, reason: str | None) -> None:
        with self._lock:
            self._connected = False
            queued_mb = self._queued_bytes / _MIB
            self._queue.clear()
            self._queued_bytes = 0
        if reason is None:
            return  # stopping: the STOP line follows
        stats = self.stats_text().split(" ", 1)[1]  # the per-type fields, without queued_mb
        self._log(f"ACRES_SENSOR_STREAM_DISCONNECTED agent={self.agent} port={self.port} "
                  f"reason={reason} queued_mb={queued_mb:.1f} {stats}")


def stream_opener(config: SessionConfig, log: LogFn = stdout_log) -> OpenStream:
    """How a session opens its agents' streams: a StreamServer listening on each agent's port."""

    def open_stream(agent: str, port: int, hello: Hello,
                    world_time: Callable[[], float]) -> StreamServer | None:
        server = StreamServer(agent, port, hello, flavor=config.flavor,
                              max_queued_bytes=config.max_queued_bytes,
                              stats_period_s=config.stats_period_s, log=log, world_time=world_time)
        return server if server.start() else None  # LISTEN_FAILED was logged

    return open_stream
