"""Whole frames from a connected TSS1 socket (ROS-free).

Small frames are read in bulk through one reusable receive buffer; each large payload gets a
PayloadBuffer (acres_sim.stream.payload_buffers) of exactly its size, with the margins the current
PayloadLayout gives its type around it. A buffer is its consumer's until released; only then does
the reader take it again for a later payload of the same type, size and layout.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from typing import NamedTuple

from acres_sim.stream import protocol
from acres_sim.stream.payload_buffers import NO_MARGINS, PayloadBuffer, PayloadLayout
from acres_sim.stream.protocol import HEADER_SIZE, FrameHeader, FrameType, ProtocolError, type_name

DEFAULT_MAX_PAYLOAD_BYTES = 64 * 1024 * 1024
_DISCARD_CHUNK = 256 * 1024
_RECEIVE_CHUNK = 256 * 1024  # the reader's reusable receive buffer
_KNOWN_TYPES = frozenset(int(t) for t in FrameType)


class StreamDesync(ProtocolError):
    """Input after which the byte stream can no longer be trusted: close and connect again."""


class FrameSkipped(ProtocolError):
    """A frame of an unknown type; its payload was read and discarded, the stream is in step."""

    def __init__(self, message: str, header: FrameHeader):
        super().__init__(message)
        self.header = header


class RawFrame(NamedTuple):  # NamedTuples: one of each per frame, thousands a second
    header: FrameHeader
    payload: bytearray | memoryview  # a small frame's own bytes, or buffer.payload
    received: float  # time.monotonic() when the last byte arrived
    buffer: PayloadBuffer | None = None  # a large payload's buffer, held for the consumer


class FrameReader:
    """Reads frames from one connected socket. Not thread-safe; one reader per connection.

    Small frames (clock, INS, barrier) arrive many to a packet: they are read in bulk into one
    reusable receive buffer and parsed out of it, so a stream of 340 small frames per second costs
    a few dozen system calls, not 680. A large payload is copied out of that buffer as far as it
    has arrived and the rest is received straight into the frame's own buffer in one blocking call
    (MSG_WAITALL). Every system call releases the GIL and has to win it back: fewer calls is what
    keeps the reader at line rate while the publishing thread runs.

    `layout`: the PayloadLayout in force (a callable, asked for every large payload): such a
    payload is received into a PayloadBuffer with those margins around it, so that the message around it
    is written in place instead of copying the payload once more.
    """

    def __init__(self, sock: socket.socket, max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
                 stop: threading.Event | None = None, buffer_bytes: int = _RECEIVE_CHUNK,
                 layout: Callable[[], PayloadLayout] = lambda: NO_MARGINS):
        self._sock = sock
        self._max = max_payload_bytes
        self._stop = stop
        self._layout = layout
        self._last: dict[int, PayloadBuffer] = {}  # by frame type: the buffer of its last large payload
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
            return RawFrame(header, payload, time.monotonic())
        buffer = self._payload_buffer(header.type, size)
        payload = buffer.payload
        self._take(payload, header.type)
        return RawFrame(header, payload, time.monotonic(), buffer)

    def _payload_buffer(self, kind: int, size: int) -> PayloadBuffer:
        """The buffer a large payload is received into, with the margins of its type around it.

        The buffer of the last payload of the type is used again when its consumers released it and
        it has this size and layout: a fresh bytearray per frame is zero-filled, and fresh memory
        faults in page by page, each a megabyte a frame."""
        layout = self._layout()
        last = self._last.get(kind)
        if last is not None and last.size == size and last.layout is layout and last.take_again():
            return last
        buffer = self._last[kind] = PayloadBuffer(size, layout, kind)
        return buffer

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
