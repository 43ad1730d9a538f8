"""The TSS1 codec against the protocol page's examples, round trips and arbitrary bytes."""

import json
import math
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acres_sim.stream import protocol as p
from acres_sim.stream.payloads import decode_payload
from acres_sim.stream.hello import encode_hello, parse_hello
from support.page_examples import POLARIS_HELLO_JSON

POLARIS_HELLO = POLARIS_HELLO_JSON


def header_bytes(kind, sequence, size, stamp, publish=0.0, magic=b"TSS1", flags=0):
    """The header written field by field, independently of protocol.HEADER."""
    return (magic + kind.to_bytes(2, "little") + flags.to_bytes(2, "little")
            + sequence.to_bytes(4, "little") + size.to_bytes(4, "little")
            + struct.pack("<d", stamp) + struct.pack("<d", publish))


# --- header ---------------------------------------------------------------------------------------

def test_seed_ins_header_is_byte_exact():
    packed = p.pack_header(3, 4, 320, 0.325, 12.5)
    assert len(packed) == 32
    assert packed == header_bytes(3, 4, 320, 0.325, 12.5)
    assert packed[:16].hex() == "5453533103000000" + "0400000040010000"


@pytest.mark.parametrize("kind, sequence, size, stamp", [
    (1, 0, 1210, 0.0), (5, 1, 1376272, 0.108333), (4, 2, 921616, 0.108333),
    (2, 3, 8, 0.325), (3, 4, 320, 0.325),
])
def test_seed_first_frames_parse(kind, sequence, size, stamp):
    header = p.parse_header(header_bytes(kind, sequence, size, stamp, 7.25))
    assert (header.type, header.sequence, header.payload_size) == (kind, sequence, size)
    assert header.stamp == stamp and header.publish_time == 7.25 and header.flags == 0
    assert header.frame_type == p.FrameType(kind)
    assert header.pack() == header_bytes(kind, sequence, size, stamp, 7.25)


def test_bad_magic_and_short_header_are_protocol_errors():
    with pytest.raises(p.ProtocolError, match="bad magic"):
        p.parse_header(header_bytes(2, 0, 8, 0.0, magic=b"TSS2"))
    with pytest.raises(p.ProtocolError, match="32 bytes"):
        p.parse_header(b"TSS1" + bytes(10))


def test_unknown_type_is_reported_by_name():
    header = p.parse_header(header_bytes(9, 17, 4, 0.0))
    with pytest.raises(p.ProtocolError, match="unknown frame type 9"):
        header.frame_type
    with pytest.raises(p.ProtocolError, match="unknown frame type 0"):
        decode_payload(0, b"")


def test_frame_types_and_ins_indices_follow_the_seed():
    assert [t.value for t in p.FrameType] == [1, 2, 3, 4, 5, 6]
    assert [t.name for t in p.FrameType] == ["HELLO", "CLOCK", "INS", "LIDAR", "CAMERA", "BARRIER"]
    page_order = ("UtmE UtmN UtmH UtmQx UtmQy UtmQz UtmQw VelX VelY VelZ GyroX GyroY GyroZ AccelX "
                  "AccelY AccelZ Lat Lon Height CovE CovN CovU EnuQx EnuQy EnuQz EnuQw EnuX EnuY EnuZ "
                  "FixStatus GridRotationDeg UtmZone TruthEnuX TruthEnuY TruthEnuZ TruthQx TruthQy "
                  "TruthQz TruthQw TruthSpeed").split()
    assert [f.name for f in p.Ins] == page_order
    assert [f.value for f in p.Ins] == list(range(40))
    assert p.INS_FIELDS == 40
    # Without a geographic reference the values 0 to 6, 16 to 21, 30 and 31 are NaN.
    assert sorted(p.INS_GEO_FIELDS) == [*range(0, 7), *range(16, 22), 30, 31]


# --- hello ----------------------------------------------------------------------------------------

def test_polaris_hello_of_the_seed():
    hello = parse_hello(POLARIS_HELLO)
    assert (hello.schema, hello.agent, hello.vehicle, hello.georeferenced) == (
        "acres-sensor-stream-1", "polaris", "polaris", True)
    assert hello.body_origin_flu_m == (1.14808, 0.0, 0.65536)
    lidar = hello.lidar
    assert lidar.enabled and lidar.frame_id == "lidar" and lidar.hz == 10
    assert (lidar.columns, lidar.rings, lidar.range_m, lidar.azimuth_order) == (1800, 32, 161.3, "cw")
    assert lidar.position_flu_m == (2.5, 0.0, 2.039) and lidar.rpy_deg == (-1.518, 5.317, 0.0)
    cam = hello.camera
    assert cam.enabled and (cam.width, cam.height, cam.hz) == (896, 512, 10)
    assert (cam.fx, cam.fy, cam.cx, cam.cy) == (599.526, 592.378, 440.130, 270.805)
    assert cam.distortion_model == "plumb_bob" and cam.encoding == "bgr8"
    assert cam.d == (-0.55389, 0.40842, -0.0099785, 0.0044239, -0.16673)
    assert cam.position_flu_m == (2.745, 0.606, 1.887) and cam.rpy_deg == (-3.49, 16.52, -2.63)
    ins = hello.ins
    assert ins.enabled and ins.hz == 100 and ins.utm_zone == 16 and ins.datum == "nad83_2011"
    assert ins.position_flu_m == (0.0, 0.0, 0.0)
    assert ins.imu_position_flu_m == (0.95, -0.45, 0.7) and ins.gnss_antenna_flu_m == (1.1, 0.0, 2.15)


def test_hello_round_trip_keeps_unknown_keys():
    doc = json.loads(POLARIS_HELLO)
    doc["mount_convention"] = "FLU from base_footprint"
    doc["future_key"] = {"x": 1}
    hello = parse_hello(json.dumps(doc).encode())
    again = parse_hello(encode_hello(hello))
    assert again == hello
    assert again.extra == {"future_key": {"x": 1}}
    assert again.mount_convention == "FLU from base_footprint"


def test_disabled_sensor_needs_no_other_keys():
    doc = json.loads(POLARIS_HELLO)
    doc["camera"] = {"enabled": False}
    hello = parse_hello(json.dumps(doc).encode())
    assert not hello.camera.enabled
    assert parse_hello(encode_hello(hello)) == hello
    written = json.loads(encode_hello(hello))
    assert written["camera"] == {"enabled": False}
    assert written["lidar"]["hz"] == 10 and isinstance(written["lidar"]["hz"], int)


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.pop("agent"), "missing key 'agent'"),
    (lambda d: d.update(schema="acres-sensor-stream-2"), "schema"),
    (lambda d: d["lidar"].pop("columns"), "missing key 'lidar.columns'"),
    (lambda d: d["lidar"].update(columns="1800"), "'lidar.columns' must be an integer"),
    (lambda d: d["lidar"].update(azimuth_order="up"), "cw or ccw"),
    (lambda d: d["camera"].update(d=[0.1, 0.2]), "'camera.d' must be an array of 5"),
    (lambda d: d["camera"].update(fx=-1), "'camera.fx' must be positive"),
    (lambda d: d["ins"].update(hz=0), "'ins.hz' must be positive"),
    (lambda d: d.update(georeferenced="yes"), "'georeferenced' must be true or false"),
    (lambda d: d.update(lidar=[1, 2]), "'lidar' must be a JSON object"),
])
def test_bad_hello_names_what_is_wrong(mutate, message):
    doc = json.loads(POLARIS_HELLO)
    mutate(doc)
    with pytest.raises(p.ProtocolError, match=message):
        parse_hello(json.dumps(doc).encode())


@pytest.mark.parametrize("payload, message", [
    (b"{", "bad JSON"), (b"\xff\xfe", "not UTF-8"), (b"[1, 2]", "JSON object"),
    (b"[" * 100000, "bad JSON"),
])
def test_hello_that_is_not_json(payload, message):
    with pytest.raises(p.ProtocolError, match=message):
        parse_hello(payload)


# --- payloads -------------------------------------------------------------------------------------

def test_polaris_lidar_payload_size_and_layout():
    rng = np.random.default_rng(1)
    points = rng.normal(size=(1800, 32, 4)).astype(np.float32)
    points[0, 9] = [27.44567, -1.746628, 0.0, 15.0]
    points[5, :, :3] = np.nan
    points[5, :, 3] = 0
    payload = p.encode_lidar(points)
    assert len(payload) == 921616
    assert struct.unpack_from("<4I", payload) == (1800, 32, 16, 0)
    # The protocol page's indexing: cell (c, r) is float32 number 4 * (c * rings + r) after the sub-header.
    c, r = 0, 9
    assert struct.unpack_from("<4f", payload, 16 + 16 * (c * 32 + r)) == tuple(np.float32(points[0, 9]))
    frame = p.decode_lidar(payload)
    assert (frame.columns, frame.rings) == (1800, 32)
    assert frame.points.shape == (1800, 32, 4) and frame.points.dtype == np.float32
    assert np.array_equal(frame.points, points, equal_nan=True)
    assert bytes(frame.point_bytes) == payload[16:]
    assert np.shares_memory(frame.points, np.frombuffer(payload, np.uint8))  # zero copy


def test_polaris_image_payload_size_and_layout():
    image = np.random.default_rng(2).integers(0, 256, (512, 896, 3), dtype=np.uint8)
    payload = p.encode_camera(image)
    assert len(payload) == 1376272
    assert struct.unpack_from("<4I", payload) == (896, 512, 1, 2688)
    frame = p.decode_camera(payload)
    assert frame.pixels.shape == (512, 896, 3)
    assert np.array_equal(frame.pixels, image)
    assert np.shares_memory(frame.pixels, np.frombuffer(payload, np.uint8))


def test_image_rows_with_padding_honour_the_row_step():
    image = np.arange(4 * 5 * 3, dtype=np.uint8).reshape(4, 5, 3)
    payload = p.encode_camera(image, row_step=20)
    assert len(payload) == 16 + 4 * 20
    frame = p.decode_camera(payload)
    assert frame.row_step == 20 and np.array_equal(frame.pixels, image)
    assert len(frame.pixel_bytes) == 80


@pytest.mark.parametrize("payload, message", [
    (struct.pack("<4I", 2, 2, 12, 0) + bytes(64), "point step 12"),
    (struct.pack("<4I", 2, 2, 16, 0) + bytes(63), "LiDAR size mismatch"),
    (bytes(7), "shorter than"),
])
def test_bad_lidar_payloads(payload, message):
    with pytest.raises(p.ProtocolError, match=message):
        p.decode_lidar(payload)


@pytest.mark.parametrize("payload, message", [
    (struct.pack("<4I", 2, 2, 2, 6) + bytes(12), "encoding 2"),
    (struct.pack("<4I", 2, 2, 1, 5) + bytes(10), "row step 5"),
    (struct.pack("<4I", 2, 2, 1, 6) + bytes(13), "camera size mismatch"),
])
def test_bad_camera_payloads(payload, message):
    with pytest.raises(p.ProtocolError, match=message):
        p.decode_camera(payload)


def test_ins_clock_barrier_round_trips():
    values = np.arange(40, dtype=np.float64) * 1.5
    values[p.Ins.Lat] = 40.4703010
    payload = p.encode_ins(values)
    assert len(payload) == 320 and payload == struct.pack("<40d", *values)
    assert np.array_equal(p.decode_ins(payload), values)
    assert p.decode_ins(payload)[p.Ins.Lat] == 40.4703010

    clock = p.encode_clock(0.32500001695007086)
    assert clock == struct.pack("<d", 0.32500001695007086)
    assert p.decode_clock(clock) == 0.32500001695007086

    barrier = p.encode_barrier(36)
    assert barrier == (36).to_bytes(8, "little")
    assert p.decode_barrier(barrier) == 36

    for kind, wrong in ((p.FrameType.INS, bytes(319)), (p.FrameType.CLOCK, bytes(9)),
                        (p.FrameType.BARRIER, bytes(4))):
        with pytest.raises(p.ProtocolError, match="payload must be"):
            decode_payload(kind, wrong)


def test_every_frame_type_round_trips_through_a_whole_frame():
    hello = parse_hello(POLARIS_HELLO)
    samples = {
        p.FrameType.HELLO: (encode_hello(hello), lambda v: v == hello),
        p.FrameType.CLOCK: (p.encode_clock(1.25), lambda v: v == 1.25),
        p.FrameType.INS: (p.encode_ins(np.full(40, 2.0)), lambda v: np.all(v == 2.0)),
        p.FrameType.LIDAR: (p.encode_lidar(np.ones((3, 2, 4), np.float32)),
                            lambda v: v.points.shape == (3, 2, 4)),
        p.FrameType.CAMERA: (p.encode_camera(np.ones((2, 3, 3), np.uint8)),
                             lambda v: v.pixels.shape == (2, 3, 3)),
        p.FrameType.BARRIER: (p.encode_barrier(12), lambda v: v == 12),
    }
    for sequence, (kind, (payload, check)) in enumerate(samples.items()):
        frame = p.encode_frame(kind, sequence, 0.5 * sequence, 99.0, payload)
        header = p.parse_header(frame[:32])
        assert header == p.FrameHeader(int(kind), sequence, len(payload), 0.5 * sequence, 99.0)
        assert check(decode_payload(header.type, memoryview(frame)[32:]))


# --- arbitrary bytes ------------------------------------------------------------------------------

@settings(max_examples=300, deadline=None)
@given(kind=st.integers(0, 8), payload=st.binary(max_size=300))
def test_arbitrary_payloads_raise_only_protocol_error(kind, payload):
    try:
        decode_payload(kind, payload)
    except p.ProtocolError:
        pass


@settings(max_examples=200, deadline=None)
@given(columns=st.integers(0, 5), rings=st.integers(0, 5), step=st.integers(0, 32),
       extra=st.integers(-20, 20), data=st.binary(max_size=64))
def test_lidar_sub_headers_with_arbitrary_sizes(columns, rings, step, extra, data):
    body_size = max(0, 16 * columns * rings + extra)
    body = (data * (body_size // max(len(data), 1) + 1))[:body_size]
    payload = struct.pack("<4I", columns, rings, step, 0) + body
    try:
        frame = p.decode_lidar(payload)
    except p.ProtocolError:
        return
    assert frame.points.shape == (columns, rings, 4)


@settings(max_examples=200, deadline=None)
@given(st.recursive(
    st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20))
def test_arbitrary_json_as_hello_raises_only_protocol_error(doc):
    try:
        payload = json.dumps(doc).encode()
    except ValueError:
        return
    try:
        parse_hello(payload)
    except p.ProtocolError:
        pass


@settings(max_examples=200, deadline=None)
@given(data=st.binary(min_size=0, max_size=40))
def test_arbitrary_headers_raise_only_protocol_error(data):
    try:
        header = p.parse_header(data)
    except p.ProtocolError:
        return
    assert data[:4] == b"TSS1" and header.payload_size >= 0 and not math.isnan(header.type)
