"""Any frame's payload by its type (ROS-free): the codec's decoders and the Hello's reader in one
table, for readers that take every frame type."""

from __future__ import annotations

from typing import Union

import numpy as np

from acres_sim.stream.hello import Hello, parse_hello
from acres_sim.stream.protocol import (
    Buffer,
    CameraFrame,
    FrameType,
    LidarFrame,
    ProtocolError,
    decode_barrier,
    decode_camera,
    decode_clock,
    decode_ins,
    decode_lidar,
)

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
