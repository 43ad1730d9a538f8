"""Fuzzing the frame reader and the payload decoders with hypothesis.

Whatever bytes a peer sends, in whatever pieces: the reader returns whole frames no larger than
max_payload_bytes or raises one of the stream's own errors (desync, skipped frame, closed stream),
and every decoder raises ProtocolError or returns a value; nothing else escapes. CI runs a short
budget; for a longer run: ACRES_FUZZ_EXAMPLES=20000 pytest test/test_stream_fuzz.py
"""

from __future__ import annotations

import pytest
import os
import socket
import threading

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acres_sim.stream import protocol
from acres_sim.stream.payloads import decode_payload
from acres_sim.stream.hello import parse_hello
from acres_sim.stream.protocol import FrameType, ProtocolError
from acres_sim.stream.frame_reader import FrameReader, FrameSkipped, StreamDesync

pytestmark = pytest.mark.ros_free  # no ROS graph nor message: CI runs it on one distribution

EXAMPLES = int(os.environ.get("ACRES_FUZZ_EXAMPLES", "150"))
MAX_PAYLOAD = 4096
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Frames that are partly right: real headers with any type, size and stamp, any payload bytes.
header_parts = st.tuples(
    st.sampled_from([b"TSS1", b"TSS1", b"TSS1", b"TSS0", b"\x00\x00\x00\x00"]),
    st.integers(0, 9), st.integers(0, 2**16 - 1), st.integers(0, 2**32 - 1),
    st.one_of(st.integers(0, 600), st.integers(0, 2**32 - 1)),
    st.floats(allow_nan=True, allow_infinity=True), st.floats(allow_nan=True))


@st.composite
def streams(draw) -> bytes:
    out = bytearray()
    for _ in range(draw(st.integers(1, 6))):
        magic, kind, flags, seq, size, stamp, publish = draw(header_parts)
        out += protocol.HEADER.pack(magic, kind, flags, seq, size, stamp, publish)
        out += draw(st.binary(max_size=min(size, 700)))
    if draw(st.booleans()):
        out += draw(st.binary(max_size=64))  # trailing garbage
    return bytes(out)


def _read_all(data: bytes, cuts: list[int]) -> list:
    a, b = socket.socketpair()
    a.settimeout(5)

    def send() -> None:
        at = 0
        for cut in sorted(set(c % (len(data) + 1) for c in cuts)) + [len(data)]:
            b.sendall(data[at:cut])
            at = max(at, cut)
        b.close()

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    reader = FrameReader(a, MAX_PAYLOAD)
    frames = []
    try:
        while True:
            try:
                frames.append(reader.read_frame())
            except FrameSkipped:
                continue
            except (StreamDesync, ConnectionError):
                break
    finally:
        sender.join(5)
        a.close()
    return frames


@FUZZ
@given(streams(), st.lists(st.integers(0, 10_000), max_size=8))
def test_reader_survives_any_bytes_in_any_pieces(data, cuts):
    for raw in _read_all(data, cuts):
        assert len(raw.payload) == raw.header.payload_size <= MAX_PAYLOAD
        assert 1 <= raw.header.type <= 6  # unknown types are skipped, never returned
        try:
            decode_payload(raw.header.type, raw.payload)
        except ProtocolError:
            pass


@FUZZ
@given(st.sampled_from(list(FrameType)), st.binary(max_size=2048))
def test_decoders_raise_only_protocol_errors(kind, payload):
    try:
        decode_payload(kind, payload)
    except ProtocolError:
        pass


@FUZZ
@given(st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=6),
    max_leaves=30))
def test_hello_parser_raises_only_protocol_errors(doc):
    import json

    try:
        parse_hello(json.dumps(doc).encode())
    except ProtocolError:
        pass
