"""acres_sim.convert.converter: every field of every message, checked without a ROS graph.

Messages are also pushed through rclpy's serializer (no Node, no graph) to prove that what the bridge
will publish is valid on the wire and comes back bit for bit.
"""

from __future__ import annotations

import array
import dataclasses
import math
import struct
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from rclpy.serialization import deserialize_message, serialize_message
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import CameraInfo, Image, NavSatFix, NavSatStatus, PointCloud2, PointField
from tf2_msgs.msg import TFMessage

from support.page_examples import POLARIS_HELLO_JSON
from harness import converted
from harness.converted import InsMessages
from acres_sim.convert.converter import FrameConverter, payload_layout, stamp_to_time
from acres_sim.convert.settings import ConvertSettings
from acres_sim.convert.stamps import stamp_to_sec_nanosec
from acres_sim.stream.payload_buffers import PayloadBuffer, PayloadLayout
from acres_sim.stream.protocol import (
    INS_FIELDS,
    INS_GEO_FIELDS,
    SUB_HEADER_SIZE,
    FrameHeader,
    FrameType,
    Ins,
    ProtocolError,
    decode_camera,
    decode_lidar,
    encode_camera,
    encode_lidar,
)
from acres_sim.stream.hello import parse_hello
from acres_sim.rotations import rpy_deg_to_quaternion

# A Maxxum-like Hello: LiDAR 180 x 8, no camera, INS at base_footprint.
MAXXUM_LIKE_HELLO_JSON = b"""{
 "schema": "acres-sensor-stream-1", "agent": "maxxum", "vehicle": "maxxum", "georeferenced": true,
 "body_origin_flu_m": [1.4, 0, 0.9],
 "lidar": {"enabled": true, "frame_id": "lidar", "hz": 10, "columns": 180, "rings": 8, "range_m": 60,
           "azimuth_order": "ccw", "position_flu_m": [1.9, 0, 3.1], "rpy_deg": [0, -2.5, 0]},
 "camera": {"enabled": false},
 "ins": {"enabled": true, "hz": 100, "position_flu_m": [0, 0, 0], "utm_zone": 16, "datum": "nad83_2011",
         "imu_position_flu_m": [0, 0, 0], "gnss_antenna_flu_m": [0, 0, 0]}
}"""

POLARIS = parse_hello(POLARIS_HELLO_JSON)
MAXXUM = parse_hello(MAXXUM_LIKE_HELLO_JSON)
STAMP = 12.345678901  # a stamp whose nanoseconds are all non-zero
FRACTION_EXPECTED = (12, 345678901)


def _header(frame_type: FrameType, stamp: float = STAMP, size: int = 0) -> FrameHeader:
    return FrameHeader(int(frame_type), 42, size, stamp, 1000.5)


def _roundtrip(msg):
    """Serialize with rclpy's C serializer and read back: the message is valid on the wire."""
    return deserialize_message(serialize_message(msg), type(msg))


def _same(a, b) -> bool:
    """Field-by-field equality of two messages with NaN equal to NaN. (Comparing serialized bytes
    is not reliable: the CDR alignment padding is not always zeroed.)"""
    if hasattr(a, "get_fields_and_field_types"):
        return type(a) is type(b) and all(_same(getattr(a, f), getattr(b, f))
                                          for f in a.get_fields_and_field_types())
    if isinstance(a, (list, tuple, array.array, np.ndarray)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return a == b


def _assert_stamp(header, frame_id: str, expected=FRACTION_EXPECTED) -> None:
    assert (header.stamp.sec, header.stamp.nanosec) == expected
    assert header.frame_id == frame_id


def _lidar_payload(u32: np.ndarray) -> bytes:
    columns, rings = u32.shape[:2]
    return struct.pack("<4I", columns, rings, 16, 0) + u32.astype("<u4").tobytes()


def _polaris_cloud_bits(with_nan: bool) -> np.ndarray:
    """(1800, 32, 4) uint32 bit patterns of float32 points; optionally NaN cells with odd payloads."""
    rng = np.random.default_rng(7)
    points = rng.uniform(-160, 160, (1800, 32, 4)).astype("<f4")
    points[..., 3] = rng.integers(0, 256, (1800, 32))
    bits = points.view("<u4").copy()
    if with_nan:
        no_return = rng.random((1800, 32)) < 0.3
        bits[no_return, :3] = 0x7FC00000  # the usual quiet NaN
        bits[no_return, 3] = 0  # intensity 0 for no return
        # NaN payloads and a sign bit must survive unchanged (bytes, not floats, are copied).
        bits[0, 0, :3] = (0x7FC00001, 0xFFC12345, 0x7FA00000)
        bits[0, 0, 3] = 0
    return bits


# ---------------------------------------------------------------------------------------------
# Time


def _exact_ns(stamp: float) -> Fraction:
    return Fraction(stamp) * 1_000_000_000


@given(st.floats(min_value=-(2.0**31), max_value=2.0**31 - 1, allow_nan=False, allow_infinity=False))
def test_stamp_to_time_is_the_nearest_nanosecond(stamp):
    time = stamp_to_time(stamp)
    assert 0 <= time.nanosec < 1_000_000_000
    total = time.sec * 1_000_000_000 + time.nanosec
    assert abs(total - _exact_ns(stamp)) <= Fraction(1, 2)
    assert _roundtrip(time) == time  # fits int32 / uint32


@given(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False),
       st.floats(min_value=-1e6, max_value=1e6, allow_nan=False))
def test_stamp_to_time_is_monotone(a, b):
    a, b = sorted((a, b))
    sa, na = stamp_to_sec_nanosec(a)
    sb, nb = stamp_to_sec_nanosec(b)
    assert (sa, na) <= (sb, nb)


@pytest.mark.parametrize(("stamp", "expected"), [
    (0.0, (0, 0)), (-0.0, (0, 0)), (0.325, (0, 325000000)), (12.345678901, (12, 345678901)),
    (0.9999999996, (1, 0)),  # rounds up to a full second: carry into sec
    (-0.3, (-1, 700000000)), (-1e-9, (-1, 999999999)), (-1.5, (-2, 500000000)),
    (0.0009765625, (0, 976562)),  # exactly 976562.5 ns: ties go to even, like round()
    (2.0**31 - 1, (2**31 - 1, 0)), (-(2.0**31), (-(2**31), 0)),
])
def test_stamp_to_time_examples(stamp, expected):
    assert stamp_to_sec_nanosec(stamp) == expected
    time = stamp_to_time(stamp)
    assert (time.sec, time.nanosec) == expected


def test_stamp_to_time_matches_the_floor_round_formula_on_stream_stamps():
    # Physics steps are k/120 s, INS epochs land on them; the simple float formula must
    # agree with the exact one there (an independent implementation will use it).
    for k in range(0, 120 * 3600 * 2, 13):
        stamp = k / 120
        sec = math.floor(stamp)
        nanosec = round((stamp - sec) * 1e9)
        if nanosec == 1_000_000_000:
            sec, nanosec = sec + 1, 0
        assert stamp_to_sec_nanosec(stamp) == (sec, nanosec), stamp


@pytest.mark.parametrize("stamp", [math.nan, math.inf, -math.inf, 2.0**31, -(2.0**31) - 1.0])
def test_stamp_outside_time_is_refused(stamp):
    with pytest.raises(ProtocolError, match="stamp"):
        stamp_to_time(stamp)


# ---------------------------------------------------------------------------------------------
# Settings


def test_settings_are_validated():
    with pytest.raises(ValueError, match="tf_source"):
        ConvertSettings(tf_source="odom")
    with pytest.raises(ValueError, match="imu_orientation_variance"):
        ConvertSettings(imu_orientation_variance=-1.0)
    with pytest.raises(ValueError, match="odom_linear_velocity_variance"):
        ConvertSettings(odom_linear_velocity_variance=math.nan)
    with pytest.raises(ValueError, match="world_frame"):
        ConvertSettings(world_frame="")
    assert ConvertSettings() == ConvertSettings("", "map", "utm", "ins", 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)


# ---------------------------------------------------------------------------------------------
# LiDAR


def _check_cloud_layout(msg: PointCloud2, columns: int, rings: int, frame_id: str) -> None:
    _assert_stamp(msg.header, frame_id)
    assert (msg.height, msg.width) == (columns, rings)
    assert [(f.name, f.offset, f.datatype, f.count) for f in msg.fields] == [
        ("x", 0, PointField.FLOAT32, 1), ("y", 4, PointField.FLOAT32, 1),
        ("z", 8, PointField.FLOAT32, 1), ("intensity", 12, PointField.FLOAT32, 1)]
    assert PointField.FLOAT32 == 7
    assert msg.is_bigendian is False
    assert msg.point_step == 16
    assert msg.row_step == 16 * rings
    assert len(msg.data) == msg.row_step * msg.height
    assert isinstance(msg.data, array.array) and msg.data.typecode == "B"


@pytest.mark.parametrize("prefix", ["", "polaris/"])
def test_polaris_cloud_is_the_payload_byte_for_byte(prefix):
    bits = _polaris_cloud_bits(with_nan=True)
    payload = _lidar_payload(bits)
    frame = decode_lidar(payload)
    converter = FrameConverter(POLARIS, ConvertSettings(frame_prefix=prefix))
    msg = converted.pointcloud(converter, _header(FrameType.LIDAR, size=len(payload)), frame)
    _check_cloud_layout(msg, 1800, 32, prefix + "lidar")
    assert msg.data.tobytes() == payload[16:]  # NaN payload bits and sign kept
    assert msg.is_dense is False
    back = _roundtrip(msg)
    assert back.data.tobytes() == payload[16:]
    assert (back.height, back.width, back.row_step, back.is_dense) == (1800, 32, 512, False)


def test_cloud_owns_its_bytes():
    # The reader reuses its buffer for the next frame: the message must not alias it.
    buffer = bytearray(_lidar_payload(_polaris_cloud_bits(with_nan=False)[:10]))
    frame = decode_lidar(memoryview(buffer))
    ten_columns = dataclasses.replace(POLARIS, lidar=dataclasses.replace(POLARIS.lidar, columns=10))
    msg = converted.pointcloud(FrameConverter(ten_columns), _header(FrameType.LIDAR), frame)
    expected = bytes(buffer[16:])
    buffer[16:] = bytes(len(buffer) - 16)
    assert msg.data.tobytes() == expected


def _in_buffer(payload: bytes, layout: PayloadLayout, kind: int) -> PayloadBuffer:
    """The payload in a PayloadBuffer with `layout`'s margins, as FrameReader hands it on."""
    buffer = PayloadBuffer(len(payload), layout, kind)
    buffer.payload[:] = payload
    return buffer


def test_cloud_and_image_are_built_in_place_in_a_buffer_of_the_converters_layout():
    converter = FrameConverter(POLARIS, ConvertSettings(frame_prefix="polaris/"))
    layout = converter.layout
    assert layout == payload_layout(POLARIS, ConvertSettings(frame_prefix="polaris/"))
    assert layout != payload_layout(POLARIS, ConvertSettings())  # the frame name's length counts
    rng = np.random.default_rng(5)
    cases = [(FrameType.LIDAR, _lidar_payload(_polaris_cloud_bits(with_nan=True)),
              lambda p, b: converter.pointcloud_cdr(_header(FrameType.LIDAR), decode_lidar(p), b)),
             (FrameType.CAMERA, encode_camera(rng.integers(0, 256, (512, 896, 3), dtype=np.uint8)),
              lambda p, b: converter.image_cdr(_header(FrameType.CAMERA), decode_camera(p), b))]
    for kind, payload, build in cases:
        copied = build(payload, None)  # no buffer: the message is a copy
        assert isinstance(copied, bytes)
        buffer = _in_buffer(payload, layout, kind)
        in_place = build(buffer.payload, buffer)
        assert in_place is buffer.whole and bytes(in_place) == copied  # the same bytes, no copy
        assert bytes(buffer.payload[SUB_HEADER_SIZE:]) == payload[SUB_HEADER_SIZE:]  # sensor bytes kept
        # an equal layout (the stream client's, asked of payload_layout for the same Hello): in place
        equal = _in_buffer(payload, dataclasses.replace(layout), kind)
        assert build(equal.payload, equal) is equal.whole
        # a buffer of another layout (read before this converter's Hello): copied
        for other in (PayloadLayout(), payload_layout(POLARIS, ConvertSettings())):
            old = _in_buffer(payload, other, kind)
            wrong = build(old.payload, old)
            assert isinstance(wrong, bytes) and wrong == copied
    # ring and time: the points are laid out anew, so no margins
    with_times = FrameConverter(POLARIS, ConvertSettings(lidar_fields="xyzirt"))
    assert with_times.layout.margins(FrameType.LIDAR) == (0, 0)
    assert with_times.layout.margins(FrameType.CAMERA) != (0, 0)


def test_frames_of_another_size_than_the_hello_are_refused():
    converter = FrameConverter(POLARIS)
    cloud = decode_lidar(_lidar_payload(_polaris_cloud_bits(with_nan=False)[:10]))
    with pytest.raises(ProtocolError, match="10 x 32 points, but the Hello says 1800 x 32"):
        converted.pointcloud(converter, _header(FrameType.LIDAR), cloud)
    image = decode_camera(encode_camera(np.zeros((6, 8, 3), np.uint8)))
    with pytest.raises(ProtocolError, match="8 x 6 pixels, but the Hello says 896 x 512"):
        converted.image(converter, _header(FrameType.CAMERA), image)


def test_is_dense_both_ways():
    converter = FrameConverter(MAXXUM)
    bits = _polaris_cloud_bits(with_nan=False)[:180, :8].copy()
    dense = converted.pointcloud(converter, _header(FrameType.LIDAR), decode_lidar(_lidar_payload(bits)))
    assert dense.is_dense is True
    _check_cloud_layout(dense, 180, 8, "lidar")
    bits[179, 7, 2] = 0x7FC00000  # a single NaN z in the last cell
    sparse = converted.pointcloud(converter, _header(FrameType.LIDAR), decode_lidar(_lidar_payload(bits)))
    assert sparse.is_dense is False
    bits[179, 7, 2] = 0
    bits[0, 0, 3] = 0x7FC00000  # a NaN intensity is a NaN in a point too
    nan_intensity = converted.pointcloud(converter, _header(FrameType.LIDAR),
                                         decode_lidar(_lidar_payload(bits)))
    assert nan_intensity.is_dense is False


def test_cloud_read_with_the_field_table_matches_the_points():
    """Read the cloud the way generic consumers do: a structured dtype built from msg.fields."""
    bits = _polaris_cloud_bits(with_nan=True)
    frame = decode_lidar(_lidar_payload(bits))
    msg = converted.pointcloud(FrameConverter(POLARIS), _header(FrameType.LIDAR), frame)
    dtype = np.dtype({"names": [f.name for f in msg.fields], "formats": ["<f4"] * len(msg.fields),
                      "offsets": [f.offset for f in msg.fields], "itemsize": msg.point_step})
    cloud = np.frombuffer(msg.data, dtype).reshape(msg.height, msg.width)
    for i, name in enumerate(("x", "y", "z", "intensity")):
        np.testing.assert_array_equal(cloud[name].view("<u4"), bits[..., i])
    # Organised: row c is column c of the scan, column r is ring r (cell index c * rings + r).
    assert cloud["x"][5, 3].view("<u4") == bits[5, 3, 0]


def test_cloud_read_with_sensor_msgs_py():
    point_cloud2 = pytest.importorskip(
        "sensor_msgs_py.point_cloud2",
        reason="sensor_msgs_py is not installed here (no wheel in this environment); "
               "test_cloud_read_with_the_field_table_matches_the_points reads the cloud the same way")
    bits = _polaris_cloud_bits(with_nan=True)
    msg = converted.pointcloud(FrameConverter(POLARIS), _header(FrameType.LIDAR),
                               decode_lidar(_lidar_payload(bits)))
    points = point_cloud2.read_points(msg, field_names=("x", "y", "z", "intensity"), skip_nans=False)
    assert points.shape[0] == 1800 * 32
    for i, name in enumerate(("x", "y", "z", "intensity")):
        np.testing.assert_array_equal(np.asarray(points[name]).view("<u4").ravel(), bits[..., i].ravel())
    valid = point_cloud2.read_points_numpy(msg, field_names=("x", "y", "z"), skip_nans=True)
    assert valid.shape[0] == int(np.sum(~np.isnan(bits[..., 0].view("<f4"))))


def test_lidar_frame_without_lidar_in_the_hello_is_refused():
    hello = dataclasses.replace(MAXXUM, lidar=dataclasses.replace(MAXXUM.lidar, enabled=False))
    frame = decode_lidar(_lidar_payload(_polaris_cloud_bits(False)[:180, :8]))
    with pytest.raises(ProtocolError, match="disables the LiDAR"):
        converted.pointcloud(FrameConverter(hello), _header(FrameType.LIDAR), frame)


# ---------------------------------------------------------------------------------------------
# Camera


def _check_camera_info(info: CameraInfo, frame_id: str) -> None:
    _assert_stamp(info.header, frame_id)
    assert (info.width, info.height) == (896, 512)
    assert info.distortion_model == "plumb_bob"
    assert list(info.d) == [-0.55389, 0.40842, -0.0099785, 0.0044239, -0.16673]
    assert list(info.k) == [599.526, 0.0, 440.130, 0.0, 592.378, 270.805, 0.0, 0.0, 1.0]
    assert list(info.r) == [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    assert list(info.p) == [599.526, 0.0, 440.130, 0.0, 0.0, 592.378, 270.805, 0.0, 0.0, 0.0, 1.0, 0.0]
    assert (info.binning_x, info.binning_y) == (0, 0)
    roi = info.roi
    assert (roi.x_offset, roi.y_offset, roi.height, roi.width, roi.do_rectify) == (0, 0, 0, 0, False)


@pytest.mark.parametrize("prefix", ["", "polaris/"])
def test_polaris_image_and_camera_info(prefix):
    rng = np.random.default_rng(3)
    image = rng.integers(0, 256, (512, 896, 3), dtype=np.uint8)
    payload = encode_camera(image)
    converter = FrameConverter(POLARIS, ConvertSettings(frame_prefix=prefix))
    msg, info = converted.image(converter, _header(FrameType.CAMERA, size=len(payload)),
                                decode_camera(payload))
    _assert_stamp(msg.header, prefix + "camera_optical")
    assert (msg.height, msg.width, msg.step) == (512, 896, 2688)
    assert msg.encoding == "bgr8"
    assert msg.is_bigendian == 0
    assert isinstance(msg.data, array.array) and msg.data.typecode == "B"
    assert msg.data.tobytes() == payload[16:]
    _check_camera_info(info, prefix + "camera_optical")
    assert _roundtrip(msg).data.tobytes() == payload[16:]
    back = _roundtrip(info)
    assert list(back.k) == list(info.k) and list(back.p) == list(info.p) and list(back.d) == list(info.d)


def _polaris_with_camera(width: int, height: int):
    camera = dataclasses.replace(POLARIS.camera, width=width, height=height)
    return dataclasses.replace(POLARIS, camera=camera)


def test_padded_image_keeps_its_row_step_and_padding():
    rng = np.random.default_rng(4)
    image = rng.integers(0, 256, (7, 5, 3), dtype=np.uint8)
    payload = bytearray(encode_camera(image, row_step=20))  # 15 bytes of pixels + 5 of padding
    for row in range(7):
        payload[16 + row * 20 + 15: 16 + row * 20 + 20] = b"\xaa\xbb\xcc\xdd" + bytes([row])
    frame = decode_camera(bytes(payload))
    msg, _ = converted.image(FrameConverter(_polaris_with_camera(5, 7)), _header(FrameType.CAMERA), frame)
    assert (msg.height, msg.width, msg.step) == (7, 5, 20)
    assert msg.data.tobytes() == bytes(payload[16:])
    # A consumer that honours `step` sees the original pixels.
    rows = np.frombuffer(msg.data, np.uint8).reshape(msg.height, msg.step)
    np.testing.assert_array_equal(rows[:, : 3 * msg.width].reshape(7, 5, 3), image)


def test_camera_info_is_a_fresh_message_per_image():
    converter = FrameConverter(POLARIS)
    frame = decode_camera(encode_camera(np.zeros((512, 896, 3), np.uint8)))
    _, first = converted.image(converter, _header(FrameType.CAMERA, stamp=1.0), frame)
    _, second = converted.image(converter, _header(FrameType.CAMERA, stamp=2.0), frame)
    assert first is not second
    assert (first.header.stamp.sec, second.header.stamp.sec) == (1, 2)
    first.k[0] = 0.0  # a consumer editing one message must not change the next
    _, third = converted.image(converter, _header(FrameType.CAMERA, stamp=3.0), frame)
    assert third.k[0] == 599.526


def test_camera_frame_without_camera_in_the_hello_is_refused():
    frame = decode_camera(encode_camera(np.zeros((4, 4, 3), np.uint8)))
    with pytest.raises(ProtocolError, match="disables the camera"):
        converted.image(FrameConverter(MAXXUM), _header(FrameType.CAMERA), frame)


# ---------------------------------------------------------------------------------------------
# INS

UTM_Q = (0.011, -0.021, 0.702, 0.711)  # deliberately not unit length: passed through as sent
ENU_Q = (0.012, -0.019, 0.693, 0.722)
TRUTH_Q = (0.001, -0.002, 0.6, 0.8)


def _ins_values(georeferenced: bool = True) -> np.ndarray:
    v = np.empty(INS_FIELDS)
    v[Ins.UtmE: Ins.UtmH + 1] = (500438.112, 4479958.172, 181.885)
    v[Ins.UtmQx: Ins.UtmQw + 1] = UTM_Q
    v[Ins.VelX: Ins.VelZ + 1] = (3.1, 0.05, -0.01)
    v[Ins.GyroX: Ins.GyroZ + 1] = (0.0011, -0.0023, 0.15)
    v[Ins.AccelX: Ins.AccelZ + 1] = (0.21, 0.32, 9.81)
    v[Ins.Lat: Ins.Height + 1] = (40.4703010, -86.9948318, 181.886)
    v[Ins.CovE: Ins.CovU + 1] = (0.0004, 0.0005, 0.0009)
    v[Ins.EnuQx: Ins.EnuQw + 1] = ENU_Q
    v[Ins.EnuX: Ins.EnuZ + 1] = (-38.7, -141.6, 0.61)
    v[Ins.FixStatus] = 2.0
    v[Ins.GridRotationDeg] = -0.27
    v[Ins.UtmZone] = 16.0
    v[Ins.TruthEnuX: Ins.TruthEnuZ + 1] = (-38.709, -141.667, 0.599)
    v[Ins.TruthQx: Ins.TruthQw + 1] = TRUTH_Q
    v[Ins.TruthSpeed] = 3.2
    if not georeferenced:
        v[list(INS_GEO_FIELDS)] = math.nan
        v[Ins.FixStatus] = -1.0
    return v


def _xyz(v) -> tuple[float, float, float]:
    return (v.x, v.y, v.z)


def _xyzw(q) -> tuple[float, float, float, float]:
    return (q.x, q.y, q.z, q.w)


def _diag(values, n) -> list[float]:
    out = [0.0] * (n * n)
    for i, value in enumerate(values):
        out[i * (n + 1)] = value
    return out


VARIANCES = ConvertSettings(imu_orientation_variance=1e-4, imu_angular_velocity_variance=2e-5,
                            imu_linear_acceleration_variance=3e-3, odom_orientation_variance=4e-4,
                            odom_linear_velocity_variance=5e-2, odom_angular_velocity_variance=6e-3)


def _convert_ins(settings: ConvertSettings, georeferenced: bool = True, hello=POLARIS) -> InsMessages:
    out = converted.ins(FrameConverter(hello, settings), _header(FrameType.INS, size=320),
                        _ins_values(georeferenced))
    for msg in (out.fix, out.imu, out.odom, out.odom_utm, out.ground_truth, out.tf):
        if msg is not None:
            assert _same(_roundtrip(msg), msg)
    return out


@pytest.mark.parametrize("hello", [POLARIS, MAXXUM], ids=["polaris", "maxxum"])
def test_ins_messages_every_field(hello):
    settings = dataclasses.replace(VARIANCES, frame_prefix="a1/")
    out = _convert_ins(settings, hello=hello)

    fix = out.fix
    _assert_stamp(fix.header, "a1/ins")
    assert (fix.latitude, fix.longitude, fix.altitude) == (40.4703010, -86.9948318, 181.886)
    assert fix.status.status == NavSatStatus.STATUS_GBAS_FIX == 2
    assert fix.status.service == NavSatStatus.SERVICE_GPS == 1
    assert list(fix.position_covariance) == _diag((0.0004, 0.0005, 0.0009), 3)
    assert fix.position_covariance_type == NavSatFix.COVARIANCE_TYPE_DIAGONAL_KNOWN == 2

    imu = out.imu
    _assert_stamp(imu.header, "a1/ins")
    assert _xyzw(imu.orientation) == ENU_Q
    assert _xyz(imu.angular_velocity) == (0.0011, -0.0023, 0.15)
    assert _xyz(imu.linear_acceleration) == (0.21, 0.32, 9.81)
    assert list(imu.orientation_covariance) == _diag((1e-4,) * 3, 3)
    assert list(imu.angular_velocity_covariance) == _diag((2e-5,) * 3, 3)
    assert list(imu.linear_acceleration_covariance) == _diag((3e-3,) * 3, 3)

    twist_cov = _diag((5e-2,) * 3 + (6e-3,) * 3, 6)
    pose_cov = _diag((0.0004, 0.0005, 0.0009) + (4e-4,) * 3, 6)
    odom = out.odom
    _assert_stamp(odom.header, "map")  # world frame: not prefixed
    assert odom.child_frame_id == "a1/base_footprint"
    assert _xyz(odom.pose.pose.position) == (-38.7, -141.6, 0.61)
    assert _xyzw(odom.pose.pose.orientation) == ENU_Q
    assert list(odom.pose.covariance) == pose_cov
    assert _xyz(odom.twist.twist.linear) == (3.1, 0.05, -0.01)
    assert _xyz(odom.twist.twist.angular) == (0.0011, -0.0023, 0.15)
    assert list(odom.twist.covariance) == twist_cov

    utm = out.odom_utm
    assert utm is not None
    _assert_stamp(utm.header, "utm")  # not prefixed
    assert utm.child_frame_id == "a1/base_footprint"
    assert _xyz(utm.pose.pose.position) == (500438.112, 4479958.172, 181.885)
    assert _xyzw(utm.pose.pose.orientation) == UTM_Q
    assert list(utm.pose.covariance) == pose_cov
    assert _xyz(utm.twist.twist.linear) == (3.1, 0.05, -0.01)
    assert _xyz(utm.twist.twist.angular) == (0.0011, -0.0023, 0.15)
    assert list(utm.twist.covariance) == twist_cov

    truth = out.ground_truth
    _assert_stamp(truth.header, "map")
    assert truth.child_frame_id == "a1/base_footprint"
    assert _xyz(truth.pose.pose.position) == (-38.709, -141.667, 0.599)
    assert _xyzw(truth.pose.pose.orientation) == TRUTH_Q
    assert _xyz(truth.twist.twist.linear) == (3.2, 0.0, 0.0)
    assert _xyz(truth.twist.twist.angular) == (0.0, 0.0, 0.0)
    assert list(truth.pose.covariance) == [0.0] * 36
    assert list(truth.twist.covariance) == [0.0] * 36

    assert out.tf is not None and len(out.tf.transforms) == 1
    t = out.tf.transforms[0]
    _assert_stamp(t.header, "map")
    assert t.child_frame_id == "a1/base_footprint"
    assert _xyz(t.transform.translation) == (-38.7, -141.6, 0.61)
    assert _xyzw(t.transform.rotation) == ENU_Q


def test_ins_quaternions_are_bit_exact():
    v = _ins_values()
    v[Ins.EnuQx: Ins.EnuQw + 1] = (0.1 + 0.2, 1 / 3, -2 / 7, math.sqrt(0.5))
    out = converted.ins(FrameConverter(POLARIS), _header(FrameType.INS), v)
    got = _xyzw(out.imu.orientation)
    assert struct.pack("<4d", *got) == v[Ins.EnuQx: Ins.EnuQw + 1].tobytes()
    assert struct.pack("<4d", *_xyzw(out.odom.pose.pose.orientation)) == v[Ins.EnuQx: Ins.EnuQw + 1].tobytes()


def test_unknown_variances_give_all_zero_covariances():
    out = _convert_ins(ConvertSettings())
    for cov in (out.imu.orientation_covariance, out.imu.angular_velocity_covariance,
                out.imu.linear_acceleration_covariance):
        assert list(cov) == [0.0] * 9
    assert list(out.odom.twist.covariance) == [0.0] * 36
    assert list(out.odom.pose.covariance) == _diag((0.0004, 0.0005, 0.0009, 0.0, 0.0, 0.0), 6)


def test_without_geographic_reference():
    out = _convert_ins(VARIANCES, georeferenced=False)
    fix = out.fix
    assert fix.status.status == NavSatStatus.STATUS_NO_FIX == -1
    assert fix.status.service == NavSatStatus.SERVICE_GPS
    assert fix.position_covariance_type == NavSatFix.COVARIANCE_TYPE_UNKNOWN == 0
    assert list(fix.position_covariance) == [0.0] * 9
    assert all(math.isnan(x) for x in (fix.latitude, fix.longitude, fix.altitude))
    assert out.odom_utm is None
    # The world pose still comes; the unknown position covariance is 0, never NaN.
    assert _xyz(out.odom.pose.pose.position) == (-38.7, -141.6, 0.61)
    assert list(out.odom.pose.covariance) == _diag((0.0, 0.0, 0.0) + (4e-4,) * 3, 6)
    assert out.tf is not None


@pytest.mark.parametrize("index", [Ins.UtmE, Ins.UtmN, Ins.UtmH, Ins.UtmQx, Ins.UtmQw])
def test_odom_utm_is_none_when_any_utm_value_is_nan(index):
    v = _ins_values()
    v[index] = math.nan
    assert converted.ins(FrameConverter(POLARIS), _header(FrameType.INS), v).odom_utm is None


@pytest.mark.parametrize(("fix_status", "expected"), [
    (2.0, 2), (1.0, 1), (0.0, 0), (5.0, 2), (-1.0, -1), (-3.0, -1), (math.nan, -1)])
def test_fix_status_is_clamped_to_navsatstatus(fix_status, expected):
    v = _ins_values()
    v[Ins.FixStatus] = fix_status
    fix = converted.ins(FrameConverter(POLARIS), _header(FrameType.INS), v).fix
    assert fix.status.status == expected
    known = NavSatFix.COVARIANCE_TYPE_DIAGONAL_KNOWN
    assert fix.position_covariance_type == (known if expected >= 0 else NavSatFix.COVARIANCE_TYPE_UNKNOWN)


def test_nan_latitude_means_no_fix_even_with_a_fix_status():
    v = _ins_values()
    v[Ins.Lat] = math.nan
    fix = converted.ins(FrameConverter(POLARIS), _header(FrameType.INS), v).fix
    assert fix.status.status == NavSatStatus.STATUS_NO_FIX
    assert fix.position_covariance_type == NavSatFix.COVARIANCE_TYPE_UNKNOWN


@pytest.mark.parametrize("source", ["ins", "ground_truth", "none"])
def test_tf_source(source):
    out = _convert_ins(ConvertSettings(tf_source=source, world_frame="world", frame_prefix="p/"))
    if source == "none":
        assert out.tf is None
        return
    t = out.tf.transforms[0]
    assert (t.header.frame_id, t.child_frame_id) == ("world", "p/base_footprint")
    pose = (out.odom if source == "ins" else out.ground_truth).pose.pose
    assert _xyz(t.transform.translation) == _xyz(pose.position)
    assert _xyzw(t.transform.rotation) == _xyzw(pose.orientation)


def test_bad_ins_values_are_refused():
    with pytest.raises(ProtocolError, match="40 values"):
        converted.ins(FrameConverter(POLARIS), _header(FrameType.INS), np.zeros(39))


# ---------------------------------------------------------------------------------------------
# Static TF, clock, barrier


@pytest.mark.parametrize("prefix", ["", "maxxum/"])
def test_static_tf_polaris_and_maxxum(prefix):
    settings = ConvertSettings(frame_prefix=prefix)
    polaris = FrameConverter(POLARIS, settings).static_tf()
    maxxum = FrameConverter(MAXXUM, settings).static_tf()
    p = prefix
    assert [(t.header.frame_id, t.child_frame_id) for t in polaris.transforms] == [
        (p + "base_footprint", p + "base_link"), (p + "base_footprint", p + "lidar"),
        (p + "base_footprint", p + "camera"), (p + "camera", p + "camera_optical"),
        (p + "base_footprint", p + "ins"), (p + "base_footprint", p + "imu"),
        (p + "base_footprint", p + "gnss")]
    assert [t.child_frame_id for t in maxxum.transforms] == [
        p + "base_link", p + "lidar", p + "ins", p + "imu", p + "gnss"]
    for t in polaris.transforms + maxxum.transforms:
        assert (t.header.stamp.sec, t.header.stamp.nanosec) == (0, 0)
    by_child = {t.child_frame_id[len(p):]: t.transform for t in polaris.transforms}
    assert _xyz(by_child["base_link"].translation) == (1.14808, 0.0, 0.65536)
    assert _xyzw(by_child["base_link"].rotation) == (0.0, 0.0, 0.0, 1.0)
    assert _xyz(by_child["lidar"].translation) == (2.5, 0.0, 2.039)
    assert _xyzw(by_child["lidar"].rotation) == tuple(rpy_deg_to_quaternion((-1.518, 5.317, 0)))
    assert _xyz(by_child["camera"].translation) == (2.745, 0.606, 1.887)
    assert _xyzw(by_child["camera"].rotation) == tuple(rpy_deg_to_quaternion((-3.49, 16.52, -2.63)))
    assert _xyz(by_child["camera_optical"].translation) == (0.0, 0.0, 0.0)
    assert _xyzw(by_child["camera_optical"].rotation) == (-0.5, 0.5, -0.5, 0.5)
    assert _xyz(by_child["ins"].translation) == (0.0, 0.0, 0.0)
    assert _xyz(by_child["imu"].translation) == (0.95, -0.45, 0.7)
    assert _xyz(by_child["gnss"].translation) == (1.1, 0.0, 2.15)
    assert _roundtrip(polaris) == polaris
    maxxum_lidar = {t.child_frame_id: t.transform for t in maxxum.transforms}[p + "lidar"]
    assert _xyzw(maxxum_lidar.rotation) == tuple(rpy_deg_to_quaternion((0, -2.5, 0)))


def test_static_tf_with_a_given_stamp():
    tf = FrameConverter(POLARIS).static_tf(stamp_s=STAMP)
    assert {(t.header.stamp.sec, t.header.stamp.nanosec) for t in tf.transforms} == {FRACTION_EXPECTED}


def test_clock_is_the_header_stamp():
    clock = FrameConverter(POLARIS).clock(_header(FrameType.CLOCK, stamp=0.325))
    assert (clock.clock.sec, clock.clock.nanosec) == (0, 325000000)
    assert _roundtrip(clock) == clock


def test_barrier():
    converter = FrameConverter(POLARIS)
    assert converter.barrier(_header(FrameType.BARRIER), 36).data == 36
    assert converter.barrier(_header(FrameType.BARRIER), 2**64 - 1).data == 2**64 - 1
    assert _roundtrip(converter.barrier(_header(FrameType.BARRIER), 2**64 - 1)).data == 2**64 - 1
    for bad in (-1, 2**64, 1.5, True):
        with pytest.raises(ProtocolError, match="barrier step"):
            converter.barrier(_header(FrameType.BARRIER), bad)


def test_messages_use_the_frame_stamp_not_the_publish_time():
    header = FrameHeader(int(FrameType.INS), 1, 320, 0.325, 98765.4321)
    out = converted.ins(FrameConverter(POLARIS), header, _ins_values())
    assert (out.fix.header.stamp.sec, out.fix.header.stamp.nanosec) == (0, 325000000)


def test_message_types():
    out = _convert_ins(ConvertSettings())
    assert isinstance(out.fix, NavSatFix)
    assert isinstance(out.tf, TFMessage)
    image, info = converted.image(
        FrameConverter(_polaris_with_camera(2, 2)), _header(FrameType.CAMERA),
        decode_camera(encode_camera(np.zeros((2, 2, 3), np.uint8))))
    assert isinstance(image, Image) and isinstance(info, CameraInfo)


def test_messages_never_share_arrays_with_the_next_one():
    converter = FrameConverter(POLARIS, VARIANCES)
    first = converted.ins(converter, _header(FrameType.INS), _ins_values())
    first.imu.orientation_covariance[0] = -1.0
    first.imu.angular_velocity_covariance[0] = -1.0
    first.imu.linear_acceleration_covariance[0] = -1.0
    first.odom.twist.covariance[0] = -1.0
    first.odom.pose.covariance[0] = -1.0
    second = converted.ins(converter, _header(FrameType.INS), _ins_values())
    assert second.imu.orientation_covariance[0] == 1e-4
    assert second.imu.angular_velocity_covariance[0] == 2e-5
    assert second.imu.linear_acceleration_covariance[0] == 3e-3
    assert second.odom.twist.covariance[0] == 5e-2
    assert second.odom.pose.covariance[0] == 0.0004
    assert second.odom_utm.twist.covariance[0] == 5e-2


# ---------------------------------------------------------------------------------------------
# lidar_fields:=xyzirt and lidar_stamp


def _small_lidar_hello(columns: int = 12, rings: int = 5, hz: float = 10.0):
    lidar = dataclasses.replace(POLARIS.lidar, columns=columns, rings=rings, hz=hz)
    return dataclasses.replace(POLARIS, lidar=lidar)


def _xyzirt(msg: PointCloud2) -> np.ndarray:
    dtype = np.dtype({"names": [f.name for f in msg.fields], "offsets": [f.offset for f in msg.fields],
                      "formats": [{PointField.FLOAT32: "<f4", PointField.UINT16: "<u2"}[f.datatype]
                                  for f in msg.fields], "itemsize": msg.point_step})
    return np.frombuffer(msg.data, dtype).reshape(msg.height, msg.width)


@pytest.mark.parametrize("stamp_mode", ["end", "start"])
def test_xyzirt_ring_and_time_follow_the_firing_formula(stamp_mode):
    columns, rings, hz, end = 12, 5, 10.0, 7.25
    hello = _small_lidar_hello(columns, rings, hz)
    pts = np.random.default_rng(5).normal(size=(columns, rings, 4)).astype(np.float32)
    pts[3, 2, :3] = np.nan
    converter = FrameConverter(hello, ConvertSettings(lidar_fields="xyzirt", lidar_stamp=stamp_mode))
    msg = converted.pointcloud(converter, FrameHeader(FrameType.LIDAR, 1, 0, end, 0.0),
                               decode_lidar(encode_lidar(pts)))
    assert [(f.name, f.offset, f.datatype, f.count) for f in msg.fields] == [
        ("x", 0, PointField.FLOAT32, 1), ("y", 4, PointField.FLOAT32, 1), ("z", 8, PointField.FLOAT32, 1),
        ("intensity", 12, PointField.FLOAT32, 1), ("ring", 16, PointField.UINT16, 1),
        ("time", 20, PointField.FLOAT32, 1)]
    assert (msg.height, msg.width, msg.point_step, msg.row_step) == (columns, rings, 24, 24 * rings)
    assert msg.is_dense is False
    header_stamp = end if stamp_mode == "end" else end - 1.0 / hz
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == stamp_to_sec_nanosec(header_stamp)
    cells = _xyzirt(msg)
    np.testing.assert_array_equal(np.stack([cells[n] for n in ("x", "y", "z", "intensity")], -1), pts)
    c, r = np.meshgrid(np.arange(columns), np.arange(rings), indexing="ij")
    np.testing.assert_array_equal(cells["ring"], r)
    firing = end - (columns - 1 - c) / (columns * hz)
    np.testing.assert_allclose(cells["time"], firing - header_stamp, atol=1e-6)
    if stamp_mode == "end":
        assert cells["time"].max() == 0.0 and cells["time"].min() > -1.0 / hz
    else:
        assert cells["time"].min() > 0.0 and abs(cells["time"].max() - 1.0 / hz) < 1e-6


def test_xyzirt_messages_own_their_bytes_and_a_start_stamp_never_goes_below_zero():
    hello = _small_lidar_hello(4, 2, 10.0)
    converter = FrameConverter(hello, ConvertSettings(lidar_fields="xyzirt", lidar_stamp="start"))
    first_pts = np.ones((4, 2, 4), np.float32)
    first = converted.pointcloud(converter, FrameHeader(FrameType.LIDAR, 1, 0, 0.05, 0.0),
                                 decode_lidar(encode_lidar(first_pts)))
    kept = bytes(first.data)
    converted.pointcloud(converter, FrameHeader(FrameType.LIDAR, 2, 0, 0.15, 0.0),
                         decode_lidar(encode_lidar(first_pts * 2)))
    assert bytes(first.data) == kept  # the converter's buffer was reused, the message was not
    # The sweep ending at 0.05 s started at -0.05 s: the header is 0 and times stay relative to it.
    assert (first.header.stamp.sec, first.header.stamp.nanosec) == (0, 0)
    times = _xyzirt(first)["time"][:, 0]
    np.testing.assert_allclose(times, 0.05 - (3 - np.arange(4)) / 40.0, atol=1e-7)


def test_xyzi_stays_the_frames_bytes_with_a_start_stamp():
    hello = _small_lidar_hello(4, 2, 10.0)
    payload = encode_lidar(np.arange(32, dtype=np.float32).reshape(4, 2, 4))
    msg = converted.pointcloud(
        FrameConverter(hello, ConvertSettings(lidar_stamp="start")),
        FrameHeader(FrameType.LIDAR, 1, 0, 3.0, 0.0), decode_lidar(payload))
    assert msg.data.tobytes() == payload[16:] and msg.point_step == 16
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == stamp_to_sec_nanosec(3.0 - 0.1)


@pytest.mark.parametrize("settings,message", [
    ({"lidar_fields": "xyz"}, "lidar_fields must be xyzi or xyzirt"),
    ({"lidar_stamp": "middle"}, "lidar_stamp must be end or start"),
])
def test_lidar_settings_are_checked(settings, message):
    with pytest.raises(ValueError, match=message):
        ConvertSettings(**settings)


@pytest.mark.parametrize("source", ["ins", "ground_truth", "none"])
def test_ins_bytes_are_what_the_middleware_serializes(source):
    # The bridge publishes INS epochs as CDR it builds itself (acres_sim.convert.ins_cdr). Whatever the
    # branch (georeferenced or not, a fix without covariance, a negative status, every tf source)
    # and whatever the frame names' lengths modulo 8 (the alignment), rclpy's own serializer must
    # write the same bytes for the message they decode to; only the padding may differ (ours is
    # zeros, it leaves it uninitialised).
    rng = np.random.default_rng(11)
    for k in range(8):  # every frame name takes every length modulo 8
        settings = dataclasses.replace(VARIANCES, tf_source=source, frame_prefix="abcdefg"[:k],
                                       world_frame="map" + "x" * k, utm_frame="utm" + "y" * k)
        converter = FrameConverter(POLARIS, settings)
        for i, georeferenced in enumerate([True, False, True, True, True]):
            v = _ins_values(georeferenced)
            v[Ins.EnuX: Ins.EnuZ + 1] += rng.normal(size=3)
            v[Ins.TruthSpeed] = float(i)
            if i == 3:
                v[Ins.CovE] = math.nan  # a fix without a covariance
            if i == 4:
                v[Ins.FixStatus] = -1.0
            epoch = converter.ins_cdr(_header(FrameType.INS, STAMP + i), v)
            assert (epoch.odom_utm is None) == (not georeferenced)
            assert (epoch.tf is None) == (source == "none")
            for name, data in epoch._asdict().items():
                if data is None:
                    continue
                kind = type(getattr(converted.ins(converter, _header(FrameType.INS, STAMP + i), v), name))
                again = serialize_message(deserialize_message(data, kind))
                assert len(again) == len(data), (name, k)
                differ = [at for at in range(len(data)) if data[at] != again[at]]
                assert all(data[at] == 0 for at in differ), (name, k, differ)


@pytest.mark.parametrize("fields", ["xyzi", "xyzirt"])
def test_cloud_image_and_clock_bytes_are_what_the_middleware_serializes(fields):
    # Clouds, images and /clock are published as CDR built here (acres_sim.convert.cdr), as the INS is:
    # rclpy's serializer must write the same bytes for what they decode to, whatever the frame
    # names' lengths modulo 8 and whatever the camera's row padding; only the padding may differ.
    small = dataclasses.replace(POLARIS, lidar=dataclasses.replace(POLARIS.lidar, columns=12),
                                camera=dataclasses.replace(POLARIS.camera, width=5, height=3))
    rng = np.random.default_rng(5)
    points = rng.normal(size=(12, 32, 4)).astype(np.float32)
    points[3, 4] = np.nan
    for k in range(8):
        converter = FrameConverter(small, ConvertSettings(frame_prefix="abcdefg"[:k], lidar_fields=fields))
        image = rng.integers(0, 256, (3, 5, 3), dtype=np.uint8)
        cloud = decode_lidar(encode_lidar(points if k % 2 else np.nan_to_num(points)))
        camera = decode_camera(encode_camera(image, row_step=15 + k))
        for kind, data in [
                (PointCloud2, converter.pointcloud_cdr(_header(FrameType.LIDAR), cloud)),
                (Image, converter.image_cdr(_header(FrameType.CAMERA), camera)),
                (Clock, converter.clock_cdr(_header(FrameType.CLOCK, STAMP + k)))]:
            msg = deserialize_message(data, kind)
            again = serialize_message(msg)
            assert len(again) == len(data), (kind, k)
            differ = np.flatnonzero(np.frombuffer(data, np.uint8) != np.frombuffer(again, np.uint8))
            assert not np.frombuffer(data, np.uint8)[differ].any(), (kind, k, differ)
        assert msg.clock.sec == 12 + k and msg.clock.nanosec == FRACTION_EXPECTED[1]
