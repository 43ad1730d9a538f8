"""The TSS1 sensor-stream codec: frame header, frame types, INS indices, Hello model, payloads.

ROS-free on purpose: the bridge, the fake game and the tests all share this one definition of
the wire format. Decoders return zero-copy numpy views into the payload buffer; every piece of
malformed input raises ProtocolError with a message that says what was wrong.
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, Mapping, NamedTuple, Union

import numpy as np

MAGIC = b"TSS1"
# magic, type, flags, sequence, payload bytes, stamp, publish time
HEADER = struct.Struct("<4sHHIIdd")
HEADER_SIZE = HEADER.size  # 32
HELLO_SCHEMA = "acres-sensor-stream-1"
PHYSICS_HZ = 120  # physics steps per second of world time: one Clock frame per step

_SUB_HEADER = struct.Struct("<4I")  # LiDAR and camera payloads both start with four uint32
SUB_HEADER_SIZE = _SUB_HEADER.size  # 16
POINT_STEP = 16  # x, y, z, intensity as float32
ENCODING_BGR8 = 1
_CLOCK = struct.Struct("<d")
_BARRIER = struct.Struct("<Q")
_UINT32_MAX = 0xFFFFFFFF


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
    if not 0 <= payload_size <= _UINT32_MAX:
        raise ProtocolError(f"payload of {payload_size} bytes does not fit the uint32 size field")
    return HEADER.pack(MAGIC, int(frame_type), flags, sequence & _UINT32_MAX, payload_size,
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
# Hello

Vec3 = tuple[float, float, float]


@dataclass(frozen=True)
class LidarConfig:
    enabled: bool
    frame_id: str = "lidar"
    hz: float = 0.0
    columns: int = 0
    rings: int = 0
    range_m: float = 0.0
    azimuth_order: str = "ccw"
    position_flu_m: Vec3 = (0.0, 0.0, 0.0)
    rpy_deg: Vec3 = (0.0, 0.0, 0.0)


@dataclass(frozen=True)
class CameraConfig:
    enabled: bool
    hz: float = 0.0
    width: int = 0
    height: int = 0
    fx: float = 0.0
    fy: float = 0.0
    cx: float = 0.0
    cy: float = 0.0
    distortion_model: str = "plumb_bob"
    d: tuple[float, ...] = (0.0, 0.0, 0.0, 0.0, 0.0)
    encoding: str = "bgr8"
    position_flu_m: Vec3 = (0.0, 0.0, 0.0)
    rpy_deg: Vec3 = (0.0, 0.0, 0.0)


@dataclass(frozen=True)
class InsConfig:
    enabled: bool
    hz: float = 0.0
    position_flu_m: Vec3 = (0.0, 0.0, 0.0)
    utm_zone: int = 0
    datum: str = ""
    imu_position_flu_m: Vec3 = (0.0, 0.0, 0.0)
    gnss_antenna_flu_m: Vec3 = (0.0, 0.0, 0.0)


@dataclass(frozen=True)
class Hello:
    agent: str
    vehicle: str
    georeferenced: bool
    body_origin_flu_m: Vec3
    lidar: LidarConfig
    camera: CameraConfig
    ins: InsConfig
    schema: str = HELLO_SCHEMA
    mount_convention: str = ""
    # Keys this codec does not model, kept so that a re-encoded Hello loses nothing.
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)

    def to_json_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = dict(self.extra)
        doc.update({
            "schema": self.schema,
            "agent": self.agent,
            "vehicle": self.vehicle,
            "georeferenced": self.georeferenced,
        })
        if self.mount_convention:
            doc["mount_convention"] = self.mount_convention
        doc["body_origin_flu_m"] = [_json_number(v) for v in self.body_origin_flu_m]
        doc["lidar"] = _block_to_json(self.lidar)
        doc["camera"] = _block_to_json(self.camera)
        doc["ins"] = _block_to_json(self.ins)
        return doc


def _json_number(value: Any) -> Any:
    # Integral floats as integers, as the game writes them ("hz": 10, not 10.0).
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _block_to_json(block: LidarConfig | CameraConfig | InsConfig) -> dict[str, Any]:
    if not block.enabled:
        return {"enabled": False}  # a disabled sensor has no layout to describe
    out: dict[str, Any] = {}
    for name in block.__dataclass_fields__:
        value = getattr(block, name)
        out[name] = [_json_number(v) for v in value] if isinstance(value, tuple) else _json_number(value)
    return out


def encode_hello(hello: Hello) -> bytes:
    return json.dumps(hello.to_json_dict(), separators=(",", ":")).encode("utf-8")


class _Reader:
    """Typed access to one JSON object, with errors that name the key path."""

    def __init__(self, doc: Any, path: str):
        if not isinstance(doc, dict):
            raise ProtocolError(f"Hello: {repr(path) if path else 'the payload'} must be a JSON object")
        self.doc = doc
        self.path = path

    def _name(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def raw(self, key: str, required: bool) -> Any:
        if key not in self.doc:
            if required:
                raise ProtocolError(f"Hello: missing key '{self._name(key)}'")
            return None
        return self.doc[key]

    def string(self, key: str, default: str | None = None) -> str:
        value = self.raw(key, default is None)
        if value is None:
            return default  # type: ignore[return-value]
        if not isinstance(value, str):
            raise ProtocolError(f"Hello: '{self._name(key)}' must be a string, got {value!r}")
        return value

    def boolean(self, key: str, default: bool | None = None) -> bool:
        value = self.raw(key, default is None)
        if value is None:
            return default  # type: ignore[return-value]
        if not isinstance(value, bool):
            raise ProtocolError(f"Hello: '{self._name(key)}' must be true or false, got {value!r}")
        return value

    def number(self, key: str, default: float | None = None, positive: bool = False) -> float:
        value = self.raw(key, default is None)
        if value is None:
            return default  # type: ignore[return-value]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ProtocolError(f"Hello: '{self._name(key)}' must be a finite number, got {value!r}")
        if positive and value <= 0:
            raise ProtocolError(f"Hello: '{self._name(key)}' must be positive, got {value!r}")
        return float(value)

    def integer(self, key: str, default: int | None = None, minimum: int | None = None) -> int:
        value = self.raw(key, default is None)
        if value is None:
            return default  # type: ignore[return-value]
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ProtocolError(f"Hello: '{self._name(key)}' must be an integer, got {value!r}")
        if minimum is not None and value < minimum:
            raise ProtocolError(f"Hello: '{self._name(key)}' must be at least {minimum}, got {value}")
        return value

    def numbers(self, key: str, count: int, default: tuple[float, ...] | None = None) -> tuple:
        value = self.raw(key, default is None)
        if value is None:
            return default  # type: ignore[return-value]
        if (not isinstance(value, list) or len(value) != count
                or any(isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)
                       for v in value)):
            raise ProtocolError(
                f"Hello: '{self._name(key)}' must be an array of {count} finite numbers, got {value!r}")
        return tuple(float(v) for v in value)

    def block(self, key: str) -> "_Reader":
        value = self.raw(key, False)
        return _Reader({} if value is None else value, self._name(key))


_ZERO3 = (0.0, 0.0, 0.0)


def _check_payload_fits(what: str, payload_bytes: int) -> None:
    # A layout whose frames could not be sent: the header's payload size is a uint32.
    if payload_bytes > _UINT32_MAX:
        raise ProtocolError(f"Hello: the {what} layout needs {payload_bytes} payload bytes per frame, more "
                            f"than the uint32 payload size field holds ({_UINT32_MAX})")


def _parse_lidar(r: _Reader) -> LidarConfig:
    if not r.boolean("enabled", False):
        return LidarConfig(enabled=False, frame_id=r.string("frame_id", "lidar"))
    order = r.string("azimuth_order")
    if order not in ("cw", "ccw"):
        raise ProtocolError(f"Hello: '{r.path}.azimuth_order' must be cw or ccw, got {order!r}")
    frame_id = r.string("frame_id")
    if not frame_id:
        raise ProtocolError(f"Hello: '{r.path}.frame_id' must not be empty")
    columns, rings = r.integer("columns", minimum=1), r.integer("rings", minimum=1)
    _check_payload_fits("LiDAR", SUB_HEADER_SIZE + POINT_STEP * columns * rings)
    return LidarConfig(
        enabled=True,
        frame_id=frame_id,
        hz=r.number("hz", positive=True),
        columns=columns,
        rings=rings,
        range_m=r.number("range_m", positive=True),
        azimuth_order=order,
        position_flu_m=r.numbers("position_flu_m", 3),
        rpy_deg=r.numbers("rpy_deg", 3),
    )


def _parse_camera(r: _Reader) -> CameraConfig:
    if not r.boolean("enabled", False):
        return CameraConfig(enabled=False)
    width, height = r.integer("width", minimum=1), r.integer("height", minimum=1)
    _check_payload_fits("camera", SUB_HEADER_SIZE + 3 * width * height)
    return CameraConfig(
        enabled=True,
        hz=r.number("hz", positive=True),
        width=width,
        height=height,
        fx=r.number("fx", positive=True),
        fy=r.number("fy", positive=True),
        cx=r.number("cx"),
        cy=r.number("cy"),
        distortion_model=r.string("distortion_model", "plumb_bob"),
        d=r.numbers("d", 5, (0.0, 0.0, 0.0, 0.0, 0.0)),
        encoding=r.string("encoding", "bgr8"),
        position_flu_m=r.numbers("position_flu_m", 3),
        rpy_deg=r.numbers("rpy_deg", 3),
    )


def _parse_ins(r: _Reader) -> InsConfig:
    if not r.boolean("enabled", False):
        return InsConfig(enabled=False)
    return InsConfig(
        enabled=True,
        hz=r.number("hz", positive=True),
        position_flu_m=r.numbers("position_flu_m", 3, _ZERO3),
        utm_zone=r.integer("utm_zone", 0),
        datum=r.string("datum", ""),
        imu_position_flu_m=r.numbers("imu_position_flu_m", 3, _ZERO3),
        gnss_antenna_flu_m=r.numbers("gnss_antenna_flu_m", 3, _ZERO3),
    )


_HELLO_KEYS = {"schema", "agent", "vehicle", "georeferenced", "mount_convention",
               "body_origin_flu_m", "lidar", "camera", "ins"}


def parse_hello(payload: bytes | bytearray | memoryview) -> Hello:
    """The Hello JSON as a validated Hello. Keys of a disabled sensor block are optional."""
    try:
        doc = json.loads(bytes(payload).decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ProtocolError(f"Hello: payload is not UTF-8 ({exc.reason} at byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise ProtocolError(f"Hello: bad JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    except RecursionError:
        raise ProtocolError("Hello: bad JSON (nested too deeply)") from None
    r = _Reader(doc, "")
    schema = r.string("schema")
    if schema != HELLO_SCHEMA:
        raise ProtocolError(f"Hello: schema {schema!r} is not {HELLO_SCHEMA!r}")
    agent = r.string("agent")
    if not agent:
        raise ProtocolError("Hello: 'agent' must not be empty")
    return Hello(
        schema=schema,
        agent=agent,
        vehicle=r.string("vehicle"),
        georeferenced=r.boolean("georeferenced"),
        mount_convention=r.string("mount_convention", ""),
        body_origin_flu_m=r.numbers("body_origin_flu_m", 3, _ZERO3),
        lidar=_parse_lidar(r.block("lidar")),
        camera=_parse_camera(r.block("camera")),
        ins=_parse_ins(r.block("ins")),
        extra={k: v for k, v in doc.items() if k not in _HELLO_KEYS},
    )


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


Payload = Union[Hello, float, np.ndarray, LidarFrame, CameraFrame, int]

_DECODERS = {
    FrameType.HELLO: parse_hello,
    FrameType.CLOCK: decode_clock,
    FrameType.INS: decode_ins,
    FrameType.LIDAR: decode_lidar,
    FrameType.CAMERA: decode_camera,
    FrameType.BARRIER: decode_barrier,
}


def decode_payload(frame_type: int, payload: Buffer) -> Payload:
    """Decode the payload of any frame type; ProtocolError for unknown types and bad payloads."""
    decoder = _DECODERS.get(frame_type)  # IntEnum keys: an int finds them without an Enum call
    if decoder is None:
        raise ProtocolError(f"unknown frame type {frame_type}")
    return decoder(payload)


def column_firing_offsets(columns: int, hz: float) -> np.ndarray:
    """Firing time of every column relative to the end of the sweep (the frame's stamp), s: column c
    of C fires at end - (C - 1 - c) / (C * hz), the last one at the stamp (protocol page: the points
    are in the sensor frame at the firing time of their column)."""
    return -(columns - 1 - np.arange(columns, dtype=np.float64)) / (columns * hz)


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
