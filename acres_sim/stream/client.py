"""Client side of the TSS1 sensor stream (ROS-free).

StreamClient: a thread that connects with exponential backoff, reads frames (FrameReader, whose
large payloads come in PayloadBuffers laid out as the owner's `layout_for` says for the last Hello),
decodes them and hands them on in arrival order as Frames; bad input is counted and logged, the
stream goes on. A Frame's consumer releases it once done (`with frame:`; payload_buffers.py has the
contract).
"""

from __future__ import annotations

import enum
import logging
import re
import socket
import threading
import time
from collections.abc import Callable
from typing import NamedTuple

from acres_sim.stream import protocol
from acres_sim.stream.frame_reader import (
    DEFAULT_MAX_PAYLOAD_BYTES,
    FrameReader,
    FrameSkipped,
    RawFrame,
    StreamDesync,
)
from acres_sim.stream.loopback import require_loopback
from acres_sim.stream.payload_buffers import NO_MARGINS, PayloadBuffer, PayloadLayout
from acres_sim.stream.protocol import (
    HEADER_SIZE,
    FrameHeader,
    FrameType,
    Hello,
    Payload,
    ProtocolError,
    type_name,
)
from acres_sim.stream.stats import StreamStats

_LOG = logging.getLogger("acres_sim.stream.client")

_RECV_BUFFER_BYTES = 16 * 1024 * 1024  # the game asks for a 16 MiB send buffer; match it
_SEQUENCE_MOD = 1 << 32
_DIGITS = re.compile(r"\d+")


class Frame(NamedTuple):
    header: FrameHeader
    payload: bytearray | memoryview
    data: Payload  # the decoded payload (views into `payload` for clouds, images, INS)
    received: float
    buffer: PayloadBuffer | None = None  # see RawFrame; release() it once done with the frame

    @property
    def type(self) -> int:
        return self.header.type

    def release(self) -> None:
        """Done with this frame and every view of its payload: the reader may use its buffer again."""
        if self.buffer is not None:
            self.buffer.release()

    def __enter__(self) -> Frame:
        return self

    def __exit__(self, *_exc: object) -> None:
        """`with frame:` releases it however the block ends."""
        self.release()


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
                 logger: logging.Logger | None = None, connect_timeout_s: float = 2.0,
                 layout_for: Callable[[Hello], PayloadLayout] = lambda hello: NO_MARGINS):
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
        # The margins around large payloads (FrameReader), asked of `layout_for` once per Hello:
        # a frame read before has the old layout in its PayloadBuffer.
        self._layout_for = layout_for
        self._layout: PayloadLayout = NO_MARGINS

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
        reader = FrameReader(sock, self._max, self._stop, layout=lambda: self._layout)
        reason, logged = "stopped", False
        try:
            while not self._stop.is_set():
                try:
                    raw = reader.read_frame()
                except FrameSkipped as exc:
                    self._bad_frame(where, exc.header.type, "unknown type", str(exc))
                    continue
                if not self._dispatch(raw, where) and raw.buffer is not None:
                    raw.buffer.release()  # refused: nobody else has it
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

    def _layout_of(self, hello: Hello) -> PayloadLayout:
        try:
            return self._layout_for(hello)
        except Exception:  # noqa: BLE001 -- the owner refuses this Hello: its payloads are copied
            return NO_MARGINS

    def _bad_frame(self, where: str, frame_type: int, fault: object, message: str) -> None:
        """Count a bad frame; log it unless the same fault of this type was logged just now."""
        self.stats.bad_frame(frame_type)
        silenced = self._faults.allow((fault, frame_type))
        if silenced is not None:
            more = f" ({silenced} more like it in the last {self._faults.period_s:.0f} s)" if silenced else ""
            self._log.error("sensor stream %s: %s%s", where, message, more)

    def _dispatch(self, raw: RawFrame, where: str) -> bool:
        """Check a frame and hand it on; False when it was refused (counted and logged)."""
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
            return False
        if header.type == FrameType.HELLO:
            self._hello_ok = True
            self._backoff.reset()  # a valid Hello arrived: the connection works
            self._layout = self._layout_of(data)  # type: ignore[arg-type]
        elif not self._hello_ok:
            self._bad_frame(where, header.type, "before hello",
                            f"{_what(header)} before the first valid Hello of this connection, not published")
            return False
        else:
            try:
                protocol.check_stamp(header)
            except ProtocolError as exc:
                self._bad_frame(where, header.type, "stamp", f"{_what(header)} not published: {exc}")
                return False
        self._check_sequence(header)
        self.stats.frame(header.type, HEADER_SIZE + header.payload_size, header.stamp,
                         raw.received - header.publish_time, raw.received)
        if header.type == FrameType.CLOCK:
            self.stats.clock_offset(header.stamp - float(data))  # type: ignore[arg-type]
        try:
            self._on_frame(Frame(header, raw.payload, data, raw.received, raw.buffer))
        except Exception:  # noqa: BLE001 -- a consumer bug must not stop the stream
            self._log.exception("sensor stream %s: handling %s frame %d failed", where,
                                type_name(header.type), header.sequence)
        return True

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
