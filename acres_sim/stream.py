"""Client side of the TSS1 sensor stream (ROS-free).

- FrameReader: reads whole frames from a connected socket, small frames in bulk through one
  reusable receive buffer; each large payload gets a bytearray of exactly its size (never grown
  by concatenation), or, for the types given room, that many bytes more around it, where a
  consumer builds its message in place (the bridge: the CDR of clouds and images). Consumers keep
  zero-copy views into it (decoded clouds and images) after the reader has moved on, so a buffer is
  only taken again for a later payload once nothing but the reader refers to it.
- StreamClient: a thread that connects with exponential backoff, reads frames, decodes them and
  hands them on in arrival order; bad input is counted and logged, the stream goes on.
- HandoffQueue: the bounded queue between the reader thread and the publishing thread. When it
  is full, heavy frames (LiDAR, camera) are dropped and counted; light frames are kept.
"""

from __future__ import annotations

import enum
import logging
import re
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import NamedTuple

from acres_sim import protocol
from acres_sim.parameters import require_loopback
from acres_sim.protocol import HEADER_SIZE, FrameHeader, FrameType, Payload, ProtocolError
from acres_sim.stats import StreamStats, type_name

_LOG = logging.getLogger("acres_sim.stream")

DEFAULT_MAX_PAYLOAD_BYTES = 64 * 1024 * 1024
_DISCARD_CHUNK = 256 * 1024
_RECV_BUFFER_BYTES = 16 * 1024 * 1024  # the game asks for a 16 MiB send buffer; match it
_RECEIVE_CHUNK = 256 * 1024  # the reader's reusable receive buffer
_SEQUENCE_MOD = 1 << 32
HEAVY_TYPES = frozenset({FrameType.LIDAR, FrameType.CAMERA})
_KNOWN_TYPES = frozenset(int(t) for t in FrameType)
_DIGITS = re.compile(r"\d+")


# frame type -> (bytes before, bytes after) its large payloads get in their buffer
PayloadRoom = dict[int, tuple[int, int]]
_NO_ROOM = (0, 0)


class StreamDesync(ProtocolError):
    """Input after which the byte stream can no longer be trusted: close and connect again."""


class FrameSkipped(ProtocolError):
    """A frame of an unknown type; its payload was read and discarded, the stream is in step."""

    def __init__(self, message: str, header: FrameHeader):
        super().__init__(message)
        self.header = header


class RawFrame(NamedTuple):  # NamedTuples: one of each per frame, thousands a second
    header: FrameHeader
    payload: bytearray | memoryview  # this frame's while anything refers to it (the reader takes
    # it again only after that); a view into the middle of a larger bytearray (.obj) when the
    # frame's type has room
    received: float  # time.monotonic() when the last byte arrived


class Frame(NamedTuple):
    header: FrameHeader
    payload: bytearray | memoryview
    data: Payload  # the decoded payload (views into `payload` for clouds, images, INS)
    received: float

    @property
    def type(self) -> int:
        return self.header.type


class FrameReader:
    """Reads frames from one connected socket. Not thread-safe; one reader per connection.

    Small frames (clock, INS, barrier) arrive many to a packet: they are read in bulk into one
    reusable receive buffer and parsed out of it, so a stream of 340 small frames per second costs
    a few dozen system calls, not 680. A large payload is copied out of that buffer as far as it
    has arrived and the rest is received straight into the frame's own buffer in one blocking call
    (MSG_WAITALL). Every system call releases the GIL and has to win it back: fewer calls is what
    keeps the reader at line rate while the publishing thread runs.

    `room` (frame type -> bytes before, bytes after; read for every large payload, so its owner may
    change it): such a payload is received into the middle of a bytearray that large and handed on
    as a memoryview of its own bytes, so that the message around it is written in place instead of
    copying the payload once more.
    """

    def __init__(self, sock: socket.socket, max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
                 stop: threading.Event | None = None, buffer_bytes: int = _RECEIVE_CHUNK,
                 room: PayloadRoom | None = None):
        self._sock = sock
        self._max = max_payload_bytes
        self._stop = stop
        self._room = room if room is not None else {}
        self._last: dict[int, bytearray] = {}  # by frame type: the buffer of its last large payload
        # what _references() counts for a buffer that only such a dict holds, on this interpreter
        self._unshared = self._references({0: bytearray()}, 0)
        self._buffer = bytearray(max(buffer_bytes, HEADER_SIZE))
        self._view = memoryview(self._buffer)
        self._start = 0  # the unread bytes are _buffer[_start:_end]
        self._end = 0

    def _recv(self, view: memoryview, flags: int = 0) -> int:
        """One recv_into; retried on a socket timeout unless stopping. 0 means the peer closed."""
        while True:
            try:
                return self._sock.recv_into(view, len(view), flags)
            except TimeoutError:
                if self._stop is None:
                    raise  # no stop event: the socket's timeout is the caller's to handle
                if self._stop.is_set():
                    raise ConnectionAbortedError("stopping") from None

    def _buffer_at_least(self, count: int, what: str | int) -> None:
        """Make sure _buffer[_start:] holds `count` unread bytes (count <= the buffer size)."""
        while self._end - self._start < count:
            if self._start and len(self._buffer) - self._start < count:  # move the rest to the front
                unread = self._end - self._start
                self._buffer[:unread] = self._view[self._start:self._end]
                self._start, self._end = 0, unread
            n = self._recv(self._view[self._end:])
            if n == 0:
                got = self._end - self._start
                if got == 0 and what == "header":
                    raise ConnectionResetError("the game closed the stream")
                raise ConnectionResetError(f"the stream closed in the middle of a frame ({_part(what)}: "
                                           f"{got} of {count} bytes)")
            self._end += n

    def _take(self, out: memoryview, what: str | int) -> None:
        """Fill `out` with the next len(out) bytes of the stream."""
        need = len(out)
        have = min(need, self._end - self._start)
        if have:
            out[:have] = self._view[self._start:self._start + have]
            self._start += have
        if self._start == self._end:
            self._start = self._end = 0
        got = have
        while got < need:
            n = self._recv(out[got:], socket.MSG_WAITALL)
            if n == 0:
                raise ConnectionResetError(f"the stream closed in the middle of a frame ({_part(what)}: "
                                           f"{got} of {need} bytes)")
            got += n

    def read_frame(self) -> RawFrame:
        """The next frame. ConnectionError when the stream ends, StreamDesync for bad magic or a
        payload above the limit (both leave the stream unusable), FrameSkipped for an unknown type."""
        self._buffer_at_least(HEADER_SIZE, "header")
        at = self._start
        try:
            header = protocol.parse_header(self._view[at:at + HEADER_SIZE])
        except protocol.BadMagic as exc:
            raise StreamDesync(f"{exc}: the stream is out of step") from None
        self._start = at + HEADER_SIZE
        size = header.payload_size
        if size > self._max:
            raise StreamDesync(f"{type_name(header.type)} frame (type {header.type}, sequence "
                               f"{header.sequence}) announces {size} payload bytes, above "
                               f"max_payload_bytes {self._max}")
        if header.type not in _KNOWN_TYPES:
            self._skip(size)
            raise FrameSkipped(f"unknown frame type {header.type} (sequence {header.sequence}), "
                               f"{size} payload bytes skipped", header)
        if size <= len(self._buffer) // 4:  # small: wait for it in the receive buffer
            self._buffer_at_least(size, header.type)
            payload = bytearray(self._view[self._start:self._start + size])
            self._start += size
        else:
            payload = self._payload_buffer(header.type, size)
            self._take(memoryview(payload), header.type)
        return RawFrame(header, payload, time.monotonic())

    def _payload_buffer(self, kind: int, size: int) -> bytearray | memoryview:
        """The buffer a large payload is received into, with the room of its type around it.

        The buffer of the last payload of the type is used again once nothing but this reader refers
        to it (its frame was dealt with and let go): a fresh bytearray per frame is zero-filled, and
        fresh memory faults in page by page, each a megabyte a frame. Any view of it still alive (a
        queued frame, a decoded cloud kept) is a reference, and then the payload gets a new buffer."""
        before, after = self._room.get(kind, _NO_ROOM)
        total = before + size + after
        last = self._last
        if kind in last and len(last[kind]) == total and self._references(last, kind) <= self._unshared:
            whole = last[kind]
        else:
            whole = last[kind] = bytearray(total)
        return memoryview(whole)[before:before + size] if before or after else whole

    @staticmethod
    def _references(buffers: dict[int, bytearray], kind: int) -> int:
        return sys.getrefcount(buffers[kind])

    def _skip(self, size: int) -> None:
        discard = memoryview(bytearray(min(size, _DISCARD_CHUNK)))
        while size > 0:
            chunk = min(size, _DISCARD_CHUNK)
            self._take(discard[:chunk], "skipped payload")
            size -= chunk


def _part(what: str | int) -> str:
    """What was being read: a name, or the frame type whose payload it was (named only on error:
    an f-string per frame costs more than the rest of a small frame's parsing)."""
    return what if isinstance(what, str) else f"{type_name(what)} payload"


class StreamState(enum.Enum):
    CONNECTING = "connecting"
    CONNECTED = "connected"
    DISCONNECTED = "disconnected"  # waiting before the next attempt
    STOPPED = "stopped"


class Backoff:
    """Exponential backoff between min_s and max_s; reset after a successful connection."""

    def __init__(self, min_s: float, max_s: float):
        if min_s <= 0 or max_s < min_s:
            raise ValueError(f"reconnect delays need 0 < min ({min_s}) <= max ({max_s})")
        self.min_s = min_s
        self.max_s = max_s
        self._next = min_s

    def next_delay(self) -> float:
        delay = self._next
        self._next = min(self._next * 2.0, self.max_s)
        return delay

    def reset(self) -> None:
        self._next = self.min_s


def connect(host: str, port: int, timeout_s: float = 2.0) -> socket.socket:
    """A TCP connection to host:port with a large receive buffer and TCP_NODELAY."""
    last: OSError | None = None
    for family, kind, proto, _name, address in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM):
        sock = socket.socket(family, kind, proto)
        try:
            # Before connect so the window scale is negotiated for it; the kernel caps the value.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, _RECV_BUFFER_BYTES)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.settimeout(timeout_s)
            sock.connect(address)
            return sock
        except OSError as exc:
            last = exc
            sock.close()
    raise last if last is not None else OSError(f"no address for {host}:{port}")


class LogLimiter:
    """One log line per kind of fault per period: the first at once, repeats counted into the next.

    A stream that repeats one fault at 100 Hz must not flood the log, yet every new kind of fault
    is reported the moment it happens. At most max_keys kinds are remembered (then it starts over),
    so memory stays bounded whatever the peer sends.
    """

    def __init__(self, period_s: float = 5.0, clock: Callable[[], float] = time.monotonic):
        self.period_s = period_s
        self.max_keys = 256
        self._clock = clock
        self._last: dict[object, float] = {}
        self._suppressed: dict[object, int] = {}

    def allow(self, key: object) -> int | None:
        """None: stay silent; otherwise how many repeats were silenced since the last line."""
        now = self._clock()
        last = self._last.get(key)
        if last is not None and now - last < self.period_s:
            self._suppressed[key] = self._suppressed.get(key, 0) + 1
            return None
        if len(self._last) >= self.max_keys:  # whatever the peer sends, this stays small
            self._last.clear()
            self._suppressed.clear()
        self._last[key] = now
        return self._suppressed.pop(key, 0)


FrameHandler = Callable[[Frame], None]
StateHandler = Callable[[StreamState, str], None]


class StreamClient:
    """Connects, reads and decodes frames in its own thread, calls `on_frame` for each good frame
    in arrival order. `on_frame` runs in the reader thread and must be quick (hand heavy work on)."""

    def __init__(self, host: str, port: int, on_frame: FrameHandler, *,
                 reconnect_min_s: float = 0.5, reconnect_max_s: float = 5.0,
                 max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
                 stats: StreamStats | None = None, on_state: StateHandler | None = None,
                 logger: logging.Logger | None = None, connect_timeout_s: float = 2.0):
        self.host = require_loopback(host)
        self.port = int(port)
        self._on_frame = on_frame
        self._on_state = on_state
        self._backoff = Backoff(reconnect_min_s, reconnect_max_s)
        self._max = int(max_payload_bytes)
        self.stats = stats if stats is not None else StreamStats()
        self._log = logger if logger is not None else _LOG
        self._connect_timeout = connect_timeout_s
        self._stop = threading.Event()
        self._sock_lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._state = StreamState.DISCONNECTED
        self._state_detail = ""
        self._expected_sequence: int | None = None
        self._connections = 0
        self._last_failure = ""
        self._hello_ok = False  # a valid Hello arrived on this connection: its frames may pass
        self._faults = LogLimiter()
        # Room around large payloads by frame type (FrameReader); its owner may change it at any
        # time: a frame read before the change has the old room.
        self.payload_room: PayloadRoom = {}

    # -- lifecycle ---------------------------------------------------------------------------
    @property
    def state(self) -> StreamState:
        return self._state

    @property
    def state_detail(self) -> str:
        return self._state_detail

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("StreamClient already started")
        self._thread = threading.Thread(target=self.run, name=f"tss1-reader-{self.port}", daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 1.0) -> bool:
        """Stop the reader: unblock any read and join the thread. True when it has ended."""
        self._stop.set()
        with self._sock_lock:
            if self._sock is not None:
                try:
                    self._sock.shutdown(socket.SHUT_RDWR)  # wakes a blocked recv at once
                except OSError:
                    pass
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout_s)
            return not self._thread.is_alive()
        return True

    def _set_state(self, state: StreamState, detail: str) -> None:
        changed = state != self._state
        self._state, self._state_detail = state, detail
        if changed and self._on_state is not None:
            self._on_state(state, detail)

    # -- the loop ----------------------------------------------------------------------------
    def run(self) -> None:
        where = f"{self.host}:{self.port}"
        try:
            while not self._stop.is_set():
                self._set_state(StreamState.CONNECTING, where)
                try:
                    sock = connect(self.host, self.port, self._connect_timeout)
                except OSError as exc:
                    reason = exc.strerror or str(exc) or type(exc).__name__
                    if reason != self._last_failure:  # once per state change, not per attempt
                        self._log.warning(
                            "sensor stream %s not reachable (%s); retrying every %.1f..%.1f s. Is the game "
                            "running with -SensorStream=%d (or fake_game --port %d)? Otherwise set the port "
                            "parameter to the game's port", where, reason, self._backoff.min_s,
                            self._backoff.max_s, self.port, self.port)
                        self._last_failure = reason
                    self._set_state(StreamState.DISCONNECTED, reason)
                    self._stop.wait(self._backoff.next_delay())
                    continue
                self._last_failure = ""
                self._serve(sock, where)
                if not self._stop.is_set():
                    self._stop.wait(self._backoff.next_delay())
        finally:
            self._set_state(StreamState.STOPPED, "stopped")

    def _serve(self, sock: socket.socket, where: str) -> None:
        # Blocking reads: stop() shuts the socket down, which wakes a blocked recv at once, so
        # there is no timeout to poll (with one, every recv would first wait in poll()).
        sock.settimeout(None)
        with self._sock_lock:
            if self._stop.is_set():
                sock.close()
                return
            self._sock = sock
        self._connections += 1
        if self._connections > 1:
            self.stats.reconnect()
        self._expected_sequence = None
        self._hello_ok = False
        self._log.info("sensor stream connected to %s", where)
        self._set_state(StreamState.CONNECTED, where)
        reader = FrameReader(sock, self._max, self._stop, room=self.payload_room)
        reason, logged = "stopped", False
        try:
            while not self._stop.is_set():
                try:
                    raw = reader.read_frame()
                except FrameSkipped as exc:
                    self._bad_frame(where, exc.header.type, "unknown type", str(exc))
                    continue
                self._dispatch(raw, where)
        except StreamDesync as exc:
            self.stats.bad_frame()
            reason, logged = str(exc), True  # this one line says it all
            self._log.error("sensor stream %s: %s; closing the connection and connecting again",
                            where, exc)
        except (ConnectionError, OSError) as exc:
            reason = str(exc) or type(exc).__name__
        finally:
            with self._sock_lock:
                self._sock = None
            try:
                sock.close()
            except OSError:
                pass
        if not self._stop.is_set():
            if not logged:
                self._log.warning("sensor stream %s disconnected: %s; connecting again", where, reason)
            self._set_state(StreamState.DISCONNECTED, reason)

    def _bad_frame(self, where: str, frame_type: int, fault: object, message: str) -> None:
        """Count a bad frame; log it unless the same fault of this type was logged just now."""
        self.stats.bad_frame(frame_type)
        silenced = self._faults.allow((fault, frame_type))
        if silenced is not None:
            more = f" ({silenced} more like it in the last {self._faults.period_s:.0f} s)" if silenced else ""
            self._log.error("sensor stream %s: %s%s", where, message, more)

    def _dispatch(self, raw: RawFrame, where: str) -> None:
        header = raw.header
        try:
            data = protocol.decode_payload(header.type, raw.payload)
        except ProtocolError as exc:
            if header.type == FrameType.HELLO:
                # Without its layout nothing on this connection can be published; the game sends
                # a Hello only when a client connects, so connect again (counted there).
                raise StreamDesync(f"Hello refused: {exc}") from None
            # Each kind of defect gets its line: the reason with its numbers taken out is the key.
            self._bad_frame(where, header.type, ("payload", _DIGITS.sub("#", str(exc))),
                            f"bad {type_name(header.type)} payload (sequence {header.sequence}), not "
                            f"published: {exc}")
            return
        if header.type == FrameType.HELLO:
            self._hello_ok = True
            self._backoff.reset()  # a valid Hello arrived: the connection works
        elif not self._hello_ok:
            self._bad_frame(where, header.type, "before hello",
                            f"{_what(header)} before the first valid Hello of this connection, not published")
            return
        else:
            try:
                protocol.check_stamp(header)
            except ProtocolError as exc:
                self._bad_frame(where, header.type, "stamp", f"{_what(header)} not published: {exc}")
                return
        self._check_sequence(header)
        self.stats.frame(header.type, HEADER_SIZE + header.payload_size, header.stamp,
                         raw.received - header.publish_time, raw.received)
        if header.type == FrameType.CLOCK:
            self.stats.clock_offset(header.stamp - float(data))  # type: ignore[arg-type]
        try:
            self._on_frame(Frame(header, raw.payload, data, raw.received))
        except Exception:  # noqa: BLE001 -- a consumer bug must not stop the stream
            self._log.exception("sensor stream %s: handling %s frame %d failed", where,
                                type_name(header.type), header.sequence)

    def _check_sequence(self, header: FrameHeader) -> None:
        # The game numbers every frame it queues and never skips a number, so a gap means frames
        # were lost. The baseline restarts after each Hello (the Core server sends its Hello as 0).
        if header.type == FrameType.HELLO:
            self._expected_sequence = None
            return
        expected = self._expected_sequence
        if expected is not None and header.sequence != expected:
            self.stats.sequence_gap()
        self._expected_sequence = (header.sequence + 1) % _SEQUENCE_MOD


def _what(header: FrameHeader) -> str:
    return f"{type_name(header.type)} frame (sequence {header.sequence})"


class HandoffQueue:
    """Bounded FIFO between the reader thread and the publishing thread.

    Heavy frames (LiDAR, camera) are refused when the queued payload bytes would exceed
    `max_bytes`; light frames (Hello, clock, INS, barrier) are refused only above `max_light`
    frames, a safety bound that a publishing thread that is alive never reaches. The consumer
    calls done() for every frame get() gave it once it has dealt with it; idle() is true while
    nothing is queued or being dealt with, so the producer may deal with a frame itself without
    overtaking an earlier one.
    """

    def __init__(self, max_bytes: int = 64 * 1024 * 1024, max_light: int = 100_000):
        self.max_bytes = max_bytes
        self.max_light = max_light
        self._items: deque[Frame] = deque()
        self._bytes = 0
        self._light = 0
        self._taken = 0  # frames get() gave out and done() has not been called for
        self._cond = threading.Condition()
        self._closed = False

    def put(self, frame: Frame) -> bool:
        """Queue `frame`; False when it was dropped."""
        size = len(frame.payload)
        heavy = frame.header.type in HEAVY_TYPES
        with self._cond:
            if self._closed:
                return False
            if heavy and self._bytes + size > self.max_bytes:
                return False
            if not heavy and self._light >= self.max_light:
                return False
            self._items.append(frame)
            self._bytes += size
            self._light += 0 if heavy else 1
            self._cond.notify()
            return True

    def get(self, timeout_s: float | None = None) -> Frame | None:
        """The oldest frame, or None after `timeout_s` or when closed and empty."""
        with self._cond:
            if not self._items and not self._closed:
                self._cond.wait(timeout_s)
            if not self._items:
                return None
            frame = self._items.popleft()
            self._bytes -= len(frame.payload)
            self._light -= 0 if frame.header.type in HEAVY_TYPES else 1
            self._taken += 1
            return frame

    def done(self) -> None:
        """The consumer has dealt with a frame get() gave it."""
        with self._cond:
            self._taken -= 1

    def idle(self) -> bool:
        """Nothing queued and nothing taken but not done."""
        with self._cond:
            return not self._items and not self._taken

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    @property
    def queued_bytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._items)


class LatestSlot:
    """A one-item mailbox between two threads: put() replaces what was not taken yet (for work where
    only the newest item matters, such as encoding the latest image), get() waits for an item."""

    def __init__(self) -> None:
        self._item: object | None = None
        self._cond = threading.Condition()

    def put(self, item: object) -> bool:
        """Leave `item`; True when it replaced one that was never taken."""
        with self._cond:
            replaced = self._item is not None
            self._item = item
            self._cond.notify()
            return replaced

    def get(self, timeout_s: float | None = None) -> object | None:
        with self._cond:
            if self._item is None:
                self._cond.wait(timeout_s)
            item, self._item = self._item, None
            return item
