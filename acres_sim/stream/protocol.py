"""The TSS1 sensor-stream codec: frame header, frame types, INS indices, payloads (the Hello's
model and reader: hello.py; any payload by frame type: payloads.py).

ROS-free on purpose: the bridge, the fake game and the tests all share this one definition of
the wire format. Decoders return zero-copy numpy views into the payload buffer; every piece of
malformed input raises ProtocolError with a message that says what was wrong.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from enum import IntEnum
from typing import NamedTuple, Union

import numpy as np

MAGIC = b"TSS1"
# magic, type, flags, sequence, payload bytes, stamp, publish time
HEADER = struct.Struct("<4sHHIIdd")
HEADER_SIZE = HEADER.size  # 32

_SUB_HEADER = struct.Struct("<4I")  # LiDAR and camera payloads both start with four uint32
SUB_HEADER_SIZE = _SUB_HEADER.size  # 16
POINT_STEP = 16  # x, y, z, intensity as float32
ENCODING_BGR8 = 1
BGR8_PIXEL_BYTES = 3
_CLOCK = struct.Struct("<d")
_BARRIER = struct.Struct("<Q")
UINT32_MAX = 0xFFFFFFFF  # the header's payload size field


class ProtocolError(ValueError):
    """Bad input on the stream; the message names what was wrong and where."""


class BadMagic(ProtocolError):
    """A header without the TSS1 magic: the byte stream is out of step (fatal for the connection)."""


# The sensor stream port the game's tools and these nodes use by default (-SensorStream=5601).
DEFAULT_STREAM_PORT = 5601


class FrameType(IntEnum):
    HELLO = 1
    CLOCK = 2
    INS = 3
    LIDAR = 4
    CAMERA = 5
    BARRIER = 6


FRAME_TYPE_NAMES = {t: t.name.lower() for t in FrameType}


def type_name(frame_type: int | None) -> str:
    """A frame type's name for logs and diagnostics ("lidar"), also for types this codec does not know."""
    if frame_type is None:
        return "unknown"
    try:
        return FRAME_TYPE_NAMES[FrameType(frame_type)]
    except ValueError:
        return f"type{frame_type}"


class Ins(IntEnum):
    """Index of each float64 of an INS payload, in the order of the game's EIns enum."""

    UtmE = 0
    UtmN = 1
    UtmH = 2
    UtmQx = 3
    UtmQy = 4
    UtmQz = 5
    UtmQw = 6
    VelX = 7
    VelY = 8
    VelZ = 9
    GyroX = 10
    GyroY = 11
    GyroZ = 12
    AccelX = 13
    AccelY = 14
    AccelZ = 15
    Lat = 16
    Lon = 17
    Height = 18
    CovE = 19
    CovN = 20
    CovU = 21
    EnuQx = 22
    EnuQy = 23
    EnuQz = 24
    EnuQw = 25
    EnuX = 26
    EnuY = 27
    EnuZ = 28
    FixStatus = 29
    GridRotationDeg = 30
    UtmZone = 31
    TruthEnuX = 32
    TruthEnuY = 33
    TruthEnuZ = 34
    TruthQx = 35
    TruthQy = 36
    TruthQz = 37
    TruthQw = 38
    TruthSpeed = 39


INS_FIELDS = 40  # the game's InsFields
INS_PAYLOAD_SIZE = 8 * INS_FIELDS
_INS_DTYPE = np.dtype("<f8")
_POINT_DTYPE = np.dtype("<f4")

# INS values that are NaN when the map has no geographic reference (protocol page, INS frame).
INS_GEO_FIELDS = (
    tuple(range(Ins.UtmE, Ins.UtmQw + 1))
    + tuple(range(Ins.Lat, Ins.CovU + 1))
    + (Ins.GridRotationDeg, Ins.UtmZone)
)


# ---------------------------------------------------------------------------------------------
# Header


class FrameHeader(NamedTuple):
    # A NamedTuple: the reader makes one per frame, several thousand a second, and a tuple is
    # the cheapest immutable record Python has.
    type: int
    sequence: int
    payload_size: int
    stamp: float
    publish_time: float
    flags: int = 0

    def pack(self) -> bytes:
        return pack_header(self.type, self.sequence, self.payload_size, self.stamp,
                           self.publish_time, self.flags)

    @property
    def frame_type(self) -> FrameType:
        """The type as FrameType; ProtocolError for a type this codec does not know."""
        try:
            return FrameType(self.type)
        except ValueError:
            raise ProtocolError(f"unknown frame type {self.type} (sequence {self.sequence})") from None


def pack_header(frame_type: int, sequence: int, payload_size: int, stamp: float,
                publish_time: float, flags: int = 0) -> bytes:
    if not 0 <= payload_size <= UINT32_MAX:
        raise ProtocolError(f"payload of {payload_size} bytes does not fit the uint32 size field")
    return HEADER.pack(MAGIC, int(frame_type), flags, sequence & UINT32_MAX, payload_size,
                       stamp, publish_time)


def parse_header(data: bytes | bytearray | memoryview) -> FrameHeader:
    """Parse the first 32 bytes of a frame. Bad magic is fatal for the connection (protocol page)."""
    if len(data) < HEADER_SIZE:
        raise ProtocolError(f"header needs {HEADER_SIZE} bytes, got {len(data)}")
    magic, kind, flags, sequence, size, stamp, publish = HEADER.unpack_from(data)
    if magic != MAGIC:
        raise BadMagic(f"bad magic {bytes(magic)!r} (expected {MAGIC!r})")
    return FrameHeader(kind, sequence, size, stamp, publish, flags)


def check_stamp(header: FrameHeader) -> None:
    """ProtocolError unless the stamp is a possible simulation time: finite and not negative
    (the world's physics clock starts at 0 and only runs forward)."""
    stamp = header.stamp
    if not math.isfinite(stamp) or stamp < 0.0:
        raise ProtocolError(f"stamp {stamp!r} s is not a simulation time (finite and >= 0 s)")


def encode_frame(frame_type: int, sequence: int, stamp: float, publish_time: float,
                 payload: bytes | bytearray | memoryview) -> bytes:
    """Header plus payload as one bytes object."""
    return pack_header(frame_type, sequence, len(payload), stamp, publish_time) + bytes(payload)


# ---------------------------------------------------------------------------------------------
# Payloads

Buffer = Union[bytes, bytearray, memoryview]


@dataclass(frozen=True)
class LidarFrame:
    columns: int
    rings: int
    points: np.ndarray  # (columns, rings, 4) float32 view: x, y, z, intensity
    point_bytes: memoryview  # the columns x rings x 16 bytes after the sub-header, unchanged


@dataclass(frozen=True)
class CameraFrame:
    width: int
    height: int
    encoding: int
    row_step: int
    pixels: np.ndarray  # (height, width, 3) uint8 view, blue green red; strided if rows are padded
    pixel_bytes: memoryview  # the height x row_step bytes after the sub-header, unchanged


def _sub_header(payload: Buffer, what: str) -> tuple[int, int, int, int]:
    if len(payload) < SUB_HEADER_SIZE:
        raise ProtocolError(f"{what} payload of {len(payload)} bytes is shorter than its "
                            f"{SUB_HEADER_SIZE}-byte sub-header")
    return _SUB_HEADER.unpack_from(payload)


def decode_lidar(payload: Buffer) -> LidarFrame:
    columns, rings, step, _reserved = _sub_header(payload, "LiDAR")
    if step != POINT_STEP:
        raise ProtocolError(f"LiDAR point step {step}, expected {POINT_STEP}")
    expected = SUB_HEADER_SIZE + POINT_STEP * columns * rings
    if len(payload) != expected:
        raise ProtocolError(f"LiDAR size mismatch: {columns} x {rings} points need {expected} "
                            f"bytes, payload has {len(payload)}")
    view = memoryview(payload)[SUB_HEADER_SIZE:]
    points = np.frombuffer(view, _POINT_DTYPE).reshape(columns, rings, 4)
    return LidarFrame(columns, rings, points, view)


def decode_camera(payload: Buffer) -> CameraFrame:
    width, height, encoding, row_step = _sub_header(payload, "camera")
    if encoding != ENCODING_BGR8:
        raise ProtocolError(f"camera encoding {encoding} unknown (1 = bgr8)")
    if row_step < 3 * width:
        raise ProtocolError(f"camera row step {row_step} is less than 3 x width {width}")
    expected = SUB_HEADER_SIZE + row_step * height
    if len(payload) != expected:
        raise ProtocolError(f"camera size mismatch: {height} rows of {row_step} bytes need "
                            f"{expected} bytes, payload has {len(payload)}")
    view = memoryview(payload)[SUB_HEADER_SIZE:]
    rows = np.frombuffer(view, np.uint8).reshape(height, row_step)
    pixels = rows[:, : 3 * width].reshape(height, width, 3)
    return CameraFrame(width, height, encoding, row_step, pixels, view)


def _fixed(payload: Buffer, size: int, what: str) -> None:
    if len(payload) != size:
        raise ProtocolError(f"{what} payload must be {size} bytes, got {len(payload)}")


def decode_ins(payload: Buffer) -> np.ndarray:
    _fixed(payload, INS_PAYLOAD_SIZE, "INS")
    return np.frombuffer(payload, _INS_DTYPE)


def decode_clock(payload: Buffer) -> float:
    _fixed(payload, _CLOCK.size, "clock")
    return _CLOCK.unpack_from(payload)[0]


def decode_barrier(payload: Buffer) -> int:
    _fixed(payload, _BARRIER.size, "barrier")
    return _BARRIER.unpack_from(payload)[0]


def encode_lidar(points: np.ndarray) -> bytes:
    """(columns, rings, 4) float32 points -> LiDAR payload."""
    points = np.asarray(points)
    if points.ndim != 3 or points.shape[2] != 4:
        raise ProtocolError(f"LiDAR points must be (columns, rings, 4), got {points.shape}")
    columns, rings = points.shape[:2]
    return (_SUB_HEADER.pack(columns, rings, POINT_STEP, 0)
            + np.ascontiguousarray(points, _POINT_DTYPE).tobytes())


def encode_camera(image: np.ndarray, row_step: int | None = None) -> bytes:
    """(height, width, 3) uint8 bgr8 image -> camera payload; row_step > 3 x width pads rows."""
    image = np.asarray(image)
    if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
        raise ProtocolError(f"camera image must be (height, width, 3) uint8, got {image.shape} {image.dtype}")
    height, width = image.shape[:2]
    step = 3 * width if row_step is None else row_step
    if step < 3 * width:
        raise ProtocolError(f"row step {step} is less than 3 x width {width}")
    if step == 3 * width:
        body = np.ascontiguousarray(image).tobytes()
    else:
        rows = np.zeros((height, step), np.uint8)
        rows[:, : 3 * width] = image.reshape(height, 3 * width)
        body = rows.tobytes()
    return _SUB_HEADER.pack(width, height, ENCODING_BGR8, step) + body


def encode_ins(values: np.ndarray | list[float] | tuple[float, ...]) -> bytes:
    values = np.asarray(values, _INS_DTYPE)
    if values.shape != (INS_FIELDS,):
        raise ProtocolError(f"INS needs {INS_FIELDS} values, got shape {values.shape}")
    return values.tobytes()


def encode_clock(vehicle_time_s: float) -> bytes:
    return _CLOCK.pack(vehicle_time_s)


def encode_barrier(step: int) -> bytes:
    return _BARRIER.pack(step)
