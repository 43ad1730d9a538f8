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
from collections.abc import Callable
from typing import NamedTuple

from acres_sim.net.log_limiter import LogLimiter
from acres_sim.net.reconnect import ReconnectLoop
from acres_sim.stream import protocol
from acres_sim.stream.payloads import decode_payload
from acres_sim.stream.frame_reader import (
    DEFAULT_MAX_PAYLOAD_BYTES,
    FrameReader,
    FrameSkipped,
    RawFrame,
    StreamDesync,
)
from acres_sim.stream.payload_buffers import NO_MARGINS, PayloadBuffer, PayloadLayout
from acres_sim.stream.protocol import HEADER_SIZE, FrameHeader, FrameType, ProtocolError, type_name
from acres_sim.stream.hello import Hello
from acres_sim.stream.payloads import Payload
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
        self._on_frame = on_frame
        self._on_state = on_state
        self._max = int(max_payload_bytes)
        self.stats = stats if stats is not None else StreamStats()
        self._log = logger if logger is not None else _LOG
        self._link = ReconnectLoop(host, port, self._serve, name=f"tss1-reader-{port}",
                                   reconnect_min_s=reconnect_min_s, reconnect_max_s=reconnect_max_s,
                                   on_attempt=self._on_attempt, on_unreachable=self._on_unreachable,
                                   on_stopped=lambda: self._set_state(StreamState.STOPPED, "stopped"),
                                   connect_timeout_s=connect_timeout_s, recv_buffer_bytes=_RECV_BUFFER_BYTES)
        self.host, self.port = self._link.host, self._link.port
        self._stop = self._link.stopping
        self._state = StreamState.DISCONNECTED
        self._state_detail = ""
        self._expected_sequence: int | None = None
        self._connections = 0
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
        self._link.start()

    def stop(self, timeout_s: float = 1.0) -> bool:
        """Stop the reader: unblock any read and join the thread. True when it has ended."""
        return self._link.stop(timeout_s)

    def run(self) -> None:
        """The reader loop in the calling thread, until stop()."""
        self._link.run()

    def _set_state(self, state: StreamState, detail: str) -> None:
        changed = state != self._state
        self._state, self._state_detail = state, detail
        if changed and self._on_state is not None:
            self._on_state(state, detail)

    # -- the connection ----------------------------------------------------------------------
    def _on_attempt(self) -> None:
        self._set_state(StreamState.CONNECTING, self._link.address)

    def _on_unreachable(self, reason: str, changed: bool) -> None:
        if changed:  # once per state change, not per attempt
            backoff = self._link.backoff
            self._log.warning(
                "sensor stream %s not reachable (%s); retrying every %.1f..%.1f s. Is the game "
                "running with -SensorStream=%d (or fake_game --port %d)? Otherwise set the port "
                "parameter to the game's port", self._link.address, reason, backoff.min_s,
                backoff.max_s, self.port, self.port)
        self._set_state(StreamState.DISCONNECTED, reason)

    def _serve(self, sock: socket.socket) -> None:
        where = self._link.address
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
            self._log.error("sensor stream %s: %s%s", where, message, self._faults.suffix(silenced))

    def _dispatch(self, raw: RawFrame, where: str) -> bool:
        """Check a frame and hand it on; False when it was refused (counted and logged)."""
        header = raw.header
        try:
            data = decode_payload(header.type, raw.payload)
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
            self._link.backoff.reset()  # a valid Hello arrived: the connection works
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
