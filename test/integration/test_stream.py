"""acres_sim.stream.client without ROS: loopback check, frame reader, reconnects, bad input, hand-off queue.

Every test uses real sockets: a small TSS1 server in the test writes frames made with
protocol.encode_frame (or deliberately broken bytes)."""

from __future__ import annotations

import json
import socket
import struct
import threading
import time

import numpy as np
import pytest
from support.bridge import ScriptedServer, frame, free_port, small_hello_json
from hypothesis import given, settings
from hypothesis import strategies as st

from acres_sim.stream import protocol
from acres_sim.stream.hello import Hello, encode_hello, parse_hello
from acres_sim.stream.protocol import FrameType, ProtocolError
from acres_sim.stream.stats import StreamStats
from acres_sim.net.loopback import NotLoopbackError
from acres_sim.stream.frame_reader import FrameReader, FrameSkipped, StreamDesync
from acres_sim.stream.handoff import HandoffQueue, LatestSlot
from acres_sim.stream.payload_buffers import PayloadLayout
from acres_sim.net.log_limiter import LogLimiter
from acres_sim.net.reconnect import Backoff
from acres_sim.stream.client import Frame, StreamClient, StreamState

HELLO = encode_hello(parse_hello(json.dumps(small_hello_json()).encode()))


def test_stream_client_refuses_a_remote_host():
    with pytest.raises(NotLoopbackError):
        StreamClient("192.168.0.10", 5601, lambda f: None)


# ---------------------------------------------------------------------------------------------
# FrameReader over a socket pair


def _pair() -> tuple[socket.socket, socket.socket]:
    a, b = socket.socketpair()
    a.settimeout(5)
    return a, b


def _send_later(sock: socket.socket, chunks: list[bytes], close: bool = True) -> threading.Thread:
    def run() -> None:
        for c in chunks:
            sock.sendall(c)
        if close:
            sock.shutdown(socket.SHUT_WR)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def test_reader_returns_frames_in_order_with_exact_payloads():
    a, b = _pair()
    rng = np.random.default_rng(1)
    points = rng.normal(size=(300, 16, 4)).astype(np.float32)
    image = rng.integers(0, 256, (120, 160, 3), dtype=np.uint8)
    payloads = [(FrameType.HELLO, HELLO), (FrameType.CLOCK, protocol.encode_clock(1.0)),
                (FrameType.LIDAR, protocol.encode_lidar(points)),
                (FrameType.CAMERA, protocol.encode_camera(image, row_step=3 * 160 + 8)),
                (FrameType.BARRIER, protocol.encode_barrier(7)), (FrameType.INS, bytes(320))]
    sender = _send_later(b, [frame(k, i, 0.5 * i, p, publish=10.0 + i) for i, (k, p) in enumerate(payloads)])
    reader = FrameReader(a, max_payload_bytes=1 << 20)
    got = [reader.read_frame() for _ in payloads]
    for i, (raw, (kind, payload)) in enumerate(zip(got, payloads)):
        assert raw.header.type == kind and raw.header.sequence == i
        assert raw.header.stamp == 0.5 * i and raw.header.publish_time == 10.0 + i
        assert bytes(raw.payload) == payload
    # each frame owns its buffer: an earlier payload is not overwritten by later reads
    assert bytes(got[2].payload) == payloads[2][1]
    with pytest.raises(ConnectionError, match="closed"):
        reader.read_frame()
    sender.join()
    a.close()
    b.close()


def test_reader_gives_payloads_margins_and_takes_a_buffer_again_only_once_released():
    a, b = _pair()
    rng = np.random.default_rng(2)
    clouds = [rng.normal(size=(300, 16, 4)).astype(np.float32) for _ in range(5)]  # 77 KB: large
    payloads = [protocol.encode_lidar(c) for c in clouds]
    sender = _send_later(b, [frame(FrameType.LIDAR, i, 0.1 * i, p) for i, p in enumerate(payloads)])
    layouts = [PayloadLayout(lidar=(40, 3))]
    reader = FrameReader(a, layout=lambda: layouts[-1])
    first = reader.read_frame()
    assert bytes(first.payload) == payloads[0] and first.buffer is not None
    assert len(first.buffer.whole) == 40 + len(payloads[0]) + 3 and first.buffer.offset == 40
    kept = protocol.decode_lidar(first.payload).points  # a consumer keeps a view: it does not release
    second = reader.read_frame()
    assert second.buffer is not first.buffer  # not released: a buffer of its own
    np.testing.assert_array_equal(kept, clouds[0])  # and the kept cloud is untouched
    assert bytes(second.payload) == payloads[1]
    second.buffer.whole[0] = 0xCD  # what a consumer wrote into the margins
    second.buffer.release()
    third = reader.read_frame()
    # released: taken again, not a fresh zero-filled one
    assert third.buffer is second.buffer and third.buffer.whole[0] == 0xCD
    assert bytes(third.payload) == payloads[2]
    third.buffer.hold()  # a second consumer (the bridge's JPEG encoder)
    third.buffer.release()
    fourth = reader.read_frame()
    assert fourth.buffer is not third.buffer  # one holder left: not taken
    fourth.buffer.release()
    layouts.append(PayloadLayout(lidar=(40, 3)))  # a new Hello's layout, equal but not the same
    fifth = reader.read_frame()
    assert fifth.buffer is not fourth.buffer and fifth.buffer.layout is layouts[-1]
    np.testing.assert_array_equal(kept, clouds[0])
    sender.join()
    a.close()
    b.close()


@settings(max_examples=40, deadline=None)
@given(cuts=st.lists(st.integers(1, 3000), min_size=1, max_size=12), seed=st.integers(0, 2**31),
       buffer_bytes=st.sampled_from([32, 100, 1000, 256 * 1024]))
def test_reader_reassembles_frames_from_any_segmentation(cuts, seed, buffer_bytes):
    # Small frames come out of the reader's receive buffer, large ones partly from it and partly
    # straight from the socket: every receive-buffer size must give back the same bytes.
    rng = np.random.default_rng(seed)
    frames = [frame(FrameType.HELLO, 0, 0.0, HELLO)]
    frames += [frame(FrameType.INS, i, i / 100, rng.bytes(320)) for i in range(1, 4)]
    frames += [frame(FrameType.CLOCK, i, i / 120, protocol.encode_clock(i / 120)) for i in range(4, 9)]
    frames.append(frame(FrameType.LIDAR, 9, 0.1, protocol.encode_lidar(
        rng.normal(size=(10, 4, 4)).astype(np.float32))))
    frames.append(frame(FrameType.BARRIER, 10, 0.1, protocol.encode_barrier(12)))
    data = b"".join(frames)
    chunks, at = [], 0
    for c in cuts:
        chunks.append(data[at:at + c])
        at += c
    chunks.append(data[at:])
    a, b = _pair()
    sender = _send_later(b, [c for c in chunks if c])
    reader = FrameReader(a, buffer_bytes=buffer_bytes)
    out = b"".join(raw.header.pack() + bytes(raw.payload) for raw in (reader.read_frame() for _ in frames))
    assert out == data
    sender.join()
    a.close()
    b.close()


def test_bad_magic_is_a_desync():
    a, b = _pair()
    _send_later(b, [b"XSS1" + bytes(28)])
    with pytest.raises(StreamDesync, match="bad magic"):
        FrameReader(a).read_frame()
    a.close()
    b.close()


def test_oversized_header_is_refused_before_any_allocation():
    a, b = _pair()
    # announces 4 GiB - 1: the reader must refuse it from the header alone (no payload follows)
    _send_later(b, [protocol.pack_header(FrameType.LIDAR, 3, 0xFFFFFFFF, 0.0, 0.0)], close=False)
    with pytest.raises(StreamDesync, match="above max_payload_bytes"):
        FrameReader(a, max_payload_bytes=64 << 20).read_frame()
    a.close()
    b.close()


def test_unknown_type_is_skipped_and_the_next_frame_is_read():
    a, b = _pair()
    junk = bytes(range(256)) * 2000  # 512 kB: discarded in chunks
    _send_later(b, [protocol.pack_header(9, 1, len(junk), 0.0, 0.0) + junk,
                    frame(FrameType.CLOCK, 2, 1.0, protocol.encode_clock(0.5))])
    reader = FrameReader(a)
    with pytest.raises(FrameSkipped, match="unknown frame type 9"):
        reader.read_frame()
    raw = reader.read_frame()
    assert raw.header.type == FrameType.CLOCK and raw.header.sequence == 2
    a.close()
    b.close()


def test_truncated_payload_says_so():
    a, b = _pair()
    whole = frame(FrameType.CAMERA, 1, 0.0, protocol.encode_camera(np.zeros((4, 4, 3), np.uint8)))
    _send_later(b, [whole[:-10]])
    with pytest.raises(ConnectionError, match="middle of a frame"):
        FrameReader(a).read_frame()
    a.close()
    b.close()


# ---------------------------------------------------------------------------------------------
# StreamClient: connect, reconnect, bad input, sequence gaps


class _Collector:
    def __init__(self):
        self.frames: list[Frame] = []
        self.cond = threading.Condition()

    def __call__(self, f: Frame) -> None:
        with self.cond:
            self.frames.append(f)
            self.cond.notify_all()

    def wait(self, predicate, timeout_s: float = 10.0) -> None:
        deadline = time.monotonic() + timeout_s
        with self.cond:
            while not predicate(self.frames):
                left = deadline - time.monotonic()
                assert left > 0, f"timed out; got {[(f.type, f.header.sequence) for f in self.frames]}"
                self.cond.wait(left)


def _client(port: int, collector: _Collector, stats: StreamStats | None = None, **kw) -> StreamClient:
    c = StreamClient("127.0.0.1", port, collector, reconnect_min_s=0.05, reconnect_max_s=0.2,
                     stats=stats, **kw)
    c.start()
    return c


def test_client_decodes_and_hands_on_frames_in_order():
    stream = [frame(FrameType.HELLO, 0, 0.0, HELLO)]
    stream += [frame(FrameType.CLOCK, i, i / 120, protocol.encode_clock(i / 120 - 2.0)) for i in range(1, 50)]
    srv = ScriptedServer([stream])
    got, stats = _Collector(), StreamStats()
    client = _client(srv.port, got, stats)
    try:
        got.wait(lambda fs: len(fs) == 50)
        assert [f.header.sequence for f in got.frames] == list(range(50))
        assert isinstance(got.frames[0].data, Hello) and got.frames[0].data.agent == "tiny"
        assert got.frames[5].data == pytest.approx(5 / 120 - 2.0)
        snap = stats.snapshot()
        assert snap.type(FrameType.CLOCK).frames == 49 and snap.sequence_gaps == 0
        assert snap.clock_offset_s == pytest.approx(2.0)
        assert client.state == StreamState.CONNECTED
    finally:
        assert client.stop()
        srv.close()
    assert client.state == StreamState.STOPPED


def test_client_lays_out_each_payload_as_its_owner_says_for_the_last_hello():
    # The layout flows one way: from the Hello the reader read, through the owner's function, into
    # the buffers of the payloads after it; a Hello the owner refuses gives payloads no margins.
    rng = np.random.default_rng(3)
    cloud = protocol.encode_lidar(rng.normal(size=(300, 16, 4)).astype(np.float32))
    doc = small_hello_json()
    other = encode_hello(parse_hello(json.dumps(dict(doc, agent="second")).encode()))
    stream = [frame(FrameType.HELLO, 0, 0.0, HELLO), frame(FrameType.LIDAR, 1, 0.1, cloud),
              frame(FrameType.HELLO, 2, 0.0, other), frame(FrameType.LIDAR, 3, 0.2, cloud)]
    asked: list[str] = []

    def layout_for(hello: Hello) -> PayloadLayout:
        asked.append(hello.agent)
        if hello.agent == "second":
            raise ValueError("refused")
        return PayloadLayout(lidar=(24, 1))

    srv = ScriptedServer([stream])
    got = _Collector()
    client = _client(srv.port, got, layout_for=layout_for)
    try:
        got.wait(lambda fs: len(fs) == 4)
        first, second = got.frames[1].buffer, got.frames[3].buffer
        assert asked == ["tiny", "second"]
        assert first.layout == PayloadLayout(lidar=(24, 1)) and first.offset == 24
        assert len(first.whole) == 24 + len(cloud) + 1 and bytes(first.payload) == cloud
        assert second.layout == PayloadLayout() and second.offset == 0 and bytes(second.payload) == cloud
    finally:
        for f in got.frames:
            f.release()
        assert client.stop()
        srv.close()


def test_client_waits_for_the_game_with_backoff_then_connects():
    port = free_port()
    got = _Collector()
    client = _client(port, got)
    try:
        time.sleep(0.4)  # several refused attempts
        assert client.state in (StreamState.CONNECTING, StreamState.DISCONNECTED)
        srv_sock = socket.socket()
        srv_sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv_sock.bind(("127.0.0.1", port))
        srv_sock.listen(1)
        conn, _ = srv_sock.accept()
        conn.sendall(frame(FrameType.HELLO, 0, 0.0, HELLO))
        got.wait(lambda fs: len(fs) == 1)
        conn.close()
        srv_sock.close()
    finally:
        assert client.stop()


def test_client_logs_an_unreachable_game_once_not_per_attempt(caplog):
    port = free_port()
    with caplog.at_level("WARNING", logger="acres_sim.stream.client"):
        client = _client(port, _Collector())
        time.sleep(0.8)  # about eight attempts at 0.05..0.2 s
        assert client.stop()
    lines = [r for r in caplog.records if "not reachable" in r.getMessage()]
    assert len(lines) == 1, [r.getMessage() for r in caplog.records]


def _bad_input_case(bad: bytes, reconnects: bool):
    good_tail = [frame(FrameType.CLOCK, 11, 1.0, protocol.encode_clock(1.0)),
                 frame(FrameType.CLOCK, 12, 1.1, protocol.encode_clock(1.1))]
    first = [frame(FrameType.HELLO, 0, 0.0, HELLO), bad] + ([] if reconnects else good_tail)
    second = [frame(FrameType.HELLO, 20, 0.0, HELLO)] + [
        frame(FrameType.CLOCK, 21 + i, 2.0 + i, protocol.encode_clock(2.0 + i)) for i in range(2)]
    return [first, second]


@pytest.mark.parametrize("name,bad,reconnects", [
    ("bad magic", b"JUNK" + bytes(28), True),
    ("oversized", protocol.pack_header(FrameType.CAMERA, 1, 1 << 31, 0.0, 0.0), True),
    ("unknown type", protocol.pack_header(42, 1, 1000, 0.0, 0.0) + bytes(1000), False),
    ("bad payload", frame(FrameType.INS, 1, 0.5, bytes(100)), False),
    ("bad lidar", frame(FrameType.LIDAR, 1, 0.5, struct.pack("<4I", 10, 10, 16, 0) + bytes(16)), False),
])
def test_bad_input_is_counted_and_the_stream_goes_on(name, bad, reconnects, caplog):
    srv = ScriptedServer(_bad_input_case(bad, reconnects), hold=not reconnects)
    got, stats = _Collector(), StreamStats()
    with caplog.at_level("INFO", logger="acres_sim.stream.client"):
        client = _client(srv.port, got, stats, max_payload_bytes=1 << 20)
        try:
            # after the bad frame, later valid frames still arrive
            got.wait(lambda fs: sum(f.type == FrameType.CLOCK for f in fs) >= 2)
        finally:
            assert client.stop()
            srv.close()
    snap = stats.snapshot()
    assert snap.bad_frames >= 1
    assert (snap.reconnects >= 1) == reconnects
    assert (srv.connections >= 2) == reconnects
    errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert errors, "the bad input was not logged"


def test_truncated_payload_then_close_reconnects_and_goes_on():
    whole = frame(FrameType.CAMERA, 1, 0.0, protocol.encode_camera(np.zeros((6, 8, 3), np.uint8)))
    first = [frame(FrameType.HELLO, 0, 0.0, HELLO), whole[:-100]]
    second = [frame(FrameType.HELLO, 5, 0.0, HELLO),
              frame(FrameType.CLOCK, 6, 1.0, protocol.encode_clock(1.0))]
    srv = ScriptedServer([first, second], hold=False)
    got, stats = _Collector(), StreamStats()
    client = _client(srv.port, got, stats)
    try:
        got.wait(lambda fs: any(f.type == FrameType.CLOCK for f in fs))
    finally:
        client.stop()
        srv.close()
    assert not any(f.type == FrameType.CAMERA for f in got.frames)
    assert stats.snapshot().reconnects >= 1


def test_sequence_gaps_are_counted_but_not_across_a_hello():
    seqs = [1, 2, 3, 5, 6, 9]  # two gaps
    stream = [frame(FrameType.HELLO, 0, 0.0, HELLO)]
    stream += [frame(FrameType.CLOCK, s, s / 120, protocol.encode_clock(0.0)) for s in seqs]
    # a Core-style Hello (sequence 0) in the middle restarts the baseline
    stream += [frame(FrameType.HELLO, 0, 0.0, HELLO),
               frame(FrameType.CLOCK, 100, 1.0, protocol.encode_clock(0))]
    srv = ScriptedServer([stream])
    got, stats = _Collector(), StreamStats()
    client = _client(srv.port, got, stats)
    try:
        got.wait(lambda fs: len(fs) == len(stream))
    finally:
        client.stop()
        srv.close()
    assert stats.snapshot().sequence_gaps == 2


def test_stop_unblocks_a_silent_connection_quickly():
    srv = ScriptedServer([[frame(FrameType.HELLO, 0, 0.0, HELLO)]])  # then silence, connection open
    got = _Collector()
    client = _client(srv.port, got)
    got.wait(lambda fs: len(fs) == 1)
    t0 = time.monotonic()
    assert client.stop(timeout_s=2.0)
    assert time.monotonic() - t0 < 2.0  # generous: the socket shutdown wakes recv at once
    srv.close()


def test_a_failing_consumer_does_not_stop_the_stream():
    stream = [frame(FrameType.HELLO, 0, 0.0, HELLO)]
    stream += [frame(FrameType.CLOCK, i, i / 120, protocol.encode_clock(0.0)) for i in range(1, 5)]
    srv = ScriptedServer([stream])
    seen = []

    def consumer(f: Frame) -> None:
        seen.append(f.header.sequence)
        if f.header.sequence == 2:
            raise RuntimeError("consumer bug")

    client = StreamClient("127.0.0.1", srv.port, consumer, reconnect_min_s=0.05, reconnect_max_s=0.1)
    client.start()
    deadline = time.monotonic() + 10
    while len(seen) < 5 and time.monotonic() < deadline:
        time.sleep(0.02)
    client.stop()
    srv.close()
    assert seen == [0, 1, 2, 3, 4]


# ---------------------------------------------------------------------------------------------
# Backoff and HandoffQueue


def test_backoff_doubles_up_to_the_maximum_and_resets():
    b = Backoff(0.5, 5.0)
    assert [b.next_delay() for _ in range(6)] == [0.5, 1.0, 2.0, 4.0, 5.0, 5.0]
    b.reset()
    assert b.next_delay() == 0.5
    with pytest.raises(ValueError):
        Backoff(2.0, 1.0)


def _qframe(kind: int, size: int, seq: int = 0) -> Frame:
    header = protocol.FrameHeader(kind, seq, size, 0.0, 0.0)
    return Frame(header, bytearray(size), None, 0.0)


def test_queue_drops_heavy_frames_first_and_keeps_light_ones():
    q = HandoffQueue(max_bytes=3_000_000)
    assert q.put(_qframe(FrameType.LIDAR, 1_000_000, 1))
    assert q.put(_qframe(FrameType.CAMERA, 1_500_000, 2))
    assert not q.put(_qframe(FrameType.LIDAR, 1_000_000, 3))  # would exceed 3 MB: dropped
    for seq in range(4, 200):  # light frames are still accepted
        assert q.put(_qframe(FrameType.INS, 320, seq))
    assert q.put(_qframe(FrameType.BARRIER, 8, 200))
    order = []
    while (f := q.get(timeout_s=0)) is not None:
        order.append(f.header.sequence)
    assert order == [1, 2, *range(4, 201)]
    assert q.queued_bytes == 0


def test_queue_light_frames_have_a_safety_bound():
    q = HandoffQueue(max_bytes=1000, max_light=10)
    assert all(q.put(_qframe(FrameType.CLOCK, 8, i)) for i in range(10))
    assert not q.put(_qframe(FrameType.CLOCK, 8, 10))


def test_queue_get_waits_and_close_releases():
    q = HandoffQueue(max_bytes=1 << 20)
    t0 = time.monotonic()
    assert q.get(timeout_s=0.05) is None
    assert time.monotonic() - t0 >= 0.04
    threading.Timer(0.05, q.close).start()
    assert q.get(timeout_s=5) is None
    assert not q.put(_qframe(FrameType.INS, 320))


def test_queue_is_idle_only_when_nothing_is_queued_or_still_being_dealt_with():
    """The reader publishes a light frame itself only when idle() says no earlier frame is left."""
    q = HandoffQueue(max_bytes=1 << 20)
    assert q.idle()
    q.put(_qframe(FrameType.LIDAR, 1000, 1))
    q.put(_qframe(FrameType.INS, 320, 2))
    assert not q.idle()
    first = q.get(timeout_s=0)
    assert first is not None and not q.idle()  # one queued, one taken
    second = q.get(timeout_s=0)
    assert second is not None and not q.idle()  # both taken, neither done
    q.done()
    assert not q.idle()
    q.done()
    assert q.idle()


def test_protocol_error_is_the_base_of_stream_errors():
    assert issubclass(StreamDesync, ProtocolError) and issubclass(FrameSkipped, ProtocolError)


def test_log_limiter_reports_each_fault_once_per_period_and_counts_the_repeats():
    now = [0.0]
    limiter = LogLimiter(5.0, clock=lambda: now[0])
    assert limiter.allow("stamp") == 0  # the first one at once
    assert limiter.allow("stamp") is None and limiter.allow("stamp") is None
    assert limiter.allow("size") == 0  # another kind is not held back
    now[0] = 5.5
    assert limiter.allow("stamp") == 2  # the next line says how many were silenced
    for i in range(10 * limiter.MAX_KEYS):  # a peer that invents a new fault every frame
        limiter.allow(("payload", i))
    assert len(limiter._last) <= limiter.MAX_KEYS and len(limiter._suppressed) <= limiter.MAX_KEYS


def test_latest_slot_keeps_only_the_newest_item():
    slot = LatestSlot()
    assert slot.get(timeout_s=0.01) is None
    assert slot.put(1) is False
    assert slot.put(2) is True  # 1 was never taken: replaced
    assert slot.get(timeout_s=0.01) == 2
    assert slot.get(timeout_s=0.01) is None


@settings(max_examples=60, deadline=None)
@given(cuts=st.lists(st.integers(min_value=1, max_value=400), max_size=12))
def test_lines_come_whole_from_any_segmentation_and_long_ones_are_skipped_once(cuts):
    from acres_sim.net.lines import TOO_LONG, read_lines

    data = b"first\n\n" + b"x" * 300 + b"\nsecond\n" + b"y" * 64 + b"\n" + b"z" * 1000 + b"\nlast\n"
    a, b = socket.socketpair()
    pieces, at = [], 0
    for cut in cuts:
        pieces.append(data[at:at + cut])
        at += cut
    pieces.append(data[at:])

    def send() -> None:
        for piece in pieces:
            if piece:
                b.sendall(piece)
        b.close()

    sender = threading.Thread(target=send)
    sender.start()
    got = list(read_lines(a, threading.Event(), 64))
    sender.join()
    a.close()
    # exactly 64 bytes is a line; 300 and 1000 are not, each reported once wherever the reads split them
    assert got == [b"first", TOO_LONG, b"second", b"y" * 64, TOO_LONG, b"last"]
