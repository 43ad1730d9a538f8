"""The Hello of the TSS1 stream (ROS-free): the sensor layout and mount poses as frozen dataclasses,
the validating reader (every fault a ProtocolError naming the key path) and the encoder."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Mapping

from acres_sim.stream.protocol import BGR8_PIXEL_BYTES, POINT_STEP, SUB_HEADER_SIZE, UINT32_MAX, ProtocolError

HELLO_SCHEMA = "acres-sensor-stream-1"

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

    @property
    def payload_size(self) -> int:
        """Bytes of one LiDAR payload of this layout: the sub-header and every point."""
        return SUB_HEADER_SIZE + POINT_STEP * self.columns * self.rings


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

    @property
    def payload_size(self) -> int:
        """Bytes of one unpadded bgr8 camera payload of this layout: the sub-header and the pixels."""
        return SUB_HEADER_SIZE + BGR8_PIXEL_BYTES * self.width * self.height


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
    if payload_bytes > UINT32_MAX:
        raise ProtocolError(f"Hello: the {what} layout needs {payload_bytes} payload bytes per frame, more "
                            f"than the uint32 payload size field holds ({UINT32_MAX})")


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
    _check_payload_fits("LiDAR", LidarConfig(enabled=True, columns=columns, rings=rings).payload_size)
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
    _check_payload_fits("camera", CameraConfig(enabled=True, width=width, height=height).payload_size)
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
