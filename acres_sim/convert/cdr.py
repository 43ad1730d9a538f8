"""Serialized ROS 2 messages built from bytes (ROS-free): the CDR the middleware sends as it is.

rclpy converts a Python message field by field before the middleware serializes it, and holds the
GIL from the first field to the last byte sent. The bridge's messages have fixed layouts per
stream, so they are built here from constant byte strings: OMG-CDR version 1, little endian
(encapsulation 00 01 00 00: what every ROS 2 middleware writes and rosbag2 stores as "cdr"),
primitives aligned to their size counted from the end of the encapsulation header, strings as
uint32 length with the NUL, then the characters and the NUL, sequences as a uint32 count and the
elements. Padding is written as zeros.

- Layout: the constant bytes between fields, tracking the offset for the alignment.
- CloudEncoder, ImageEncoder: sensor_msgs/PointCloud2 and Image around the sensor's own bytes.
  Given `into`, the buffer the bytes sit in with exactly the encoder's `margins` around them (the
  caller knows: acres_sim.stream.payload_buffers), the message is written around them in place; otherwise
  they are copied once, into the one bytes object the middleware reads.
- clock(): rosgraph_msgs/Clock.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import NamedTuple

from acres_sim.cdr_encoding import ENCAPSULATION, align

STAMP = struct.Struct("<iI")  # builtin_interfaces/Time: int32 sec, uint32 nanosec
STAMP_AT = len(ENCAPSULATION)  # the stamp of a message that opens with its Header (or a Clock)
_UINT32 = struct.Struct("<I")
_STEP_AND_SIZE = struct.Struct("<II")


class Layout:
    """Builds the constant bytes between fields, tracking the CDR offset for the alignment."""

    def __init__(self, offset: int):
        self.offset = offset
        self._parts: list[bytes] = []

    def pad(self, alignment: int) -> None:
        end = align(self.offset, alignment)
        self._parts.append(bytes(end - self.offset))
        self.offset = end

    def string(self, text: str) -> None:
        self.pad(4)
        data = text.encode() + b"\x00"
        self._parts.append(_UINT32.pack(len(data)) + data)
        self.offset += 4 + len(data)

    def uint32(self, *values: int) -> None:
        self.pad(4)
        self._parts.append(struct.pack(f"<{len(values)}I", *values))
        self.offset += 4 * len(values)

    def uint8(self, value: int) -> None:
        self._parts.append(bytes((value,)))
        self.offset += 1

    def take(self) -> bytes:
        return b"".join(self._parts)


def _around(head: bytes, data: bytes | bytearray | memoryview, tail: bytes,
            into: bytearray | None) -> bytes | bytearray:
    """head + data + tail: written into `into` around the data it already holds (len(head) bytes
    before them, len(tail) after), else joined into new bytes (one copy of the data)."""
    if into is None:
        return b"".join((head, data, tail))
    size = memoryview(data).nbytes
    if len(into) != len(head) + size + len(tail):
        raise ValueError(f"a buffer of {len(into)} bytes has not the margins for {len(head)} + {size} + "
                         f"{len(tail)}: the payload layout is not this encoder's")
    into[:len(head)] = head
    into[len(into) - len(tail):] = tail
    return into


def clock(sec: int, nanosec: int) -> bytes:
    """rosgraph_msgs/Clock: one builtin_interfaces/Time."""
    return ENCAPSULATION + STAMP.pack(sec, nanosec)


class PointFieldSpec(NamedTuple):
    """One sensor_msgs/PointField."""

    name: str
    offset: int
    datatype: int
    count: int = 1


class CloudEncoder:
    """sensor_msgs/PointCloud2 of one fixed layout: header, height, width, fields, is_bigendian
    (false), point_step, row_step, data, is_dense. Only the stamp, the data and is_dense vary."""

    def __init__(self, frame_id: str, height: int, width: int, fields: Sequence[PointFieldSpec],
                 point_step: int):
        layout = Layout(STAMP.size)
        layout.string(frame_id)
        layout.uint32(height, width, len(fields))
        for name, offset, datatype, count in fields:
            layout.string(name)
            layout.uint32(offset)
            layout.uint8(datatype)
            layout.uint32(count)
        layout.uint8(0)  # is_bigendian
        self.data_size = height * width * point_step
        layout.uint32(point_step, point_step * width, self.data_size)
        self._before_data = layout.take()
        self.margins = (len(ENCAPSULATION) + STAMP.size + len(self._before_data), 1)  # before, after the data

    def encode(self, sec: int, nanosec: int, data: bytes | bytearray | memoryview,
               is_dense: bool, into: bytearray | None = None) -> bytes | bytearray:
        """The message; `into` when given (the buffer `data` lies in, with `margins` around it)."""
        if memoryview(data).nbytes != self.data_size:
            raise ValueError(f"{memoryview(data).nbytes} point bytes, the layout holds {self.data_size}")
        head = b"".join((ENCAPSULATION, STAMP.pack(sec, nanosec), self._before_data))
        return _around(head, data, b"\x01" if is_dense else b"\x00", into)


class ImageEncoder:
    """sensor_msgs/Image of one fixed layout: header, height, width, encoding, is_bigendian (0),
    step, data. The stamp, the step (the row length, padding included) and the data vary."""

    def __init__(self, frame_id: str, height: int, width: int, encoding: str):
        layout = Layout(STAMP.size)
        layout.string(frame_id)
        layout.uint32(height, width)
        layout.string(encoding)
        layout.uint8(0)  # is_bigendian
        layout.pad(4)
        self.height = height
        self._before_step = layout.take()
        self.margins = (len(ENCAPSULATION) + STAMP.size + len(self._before_step) + _STEP_AND_SIZE.size, 0)

    def encode(self, sec: int, nanosec: int, step: int, data: bytes | bytearray | memoryview,
               into: bytearray | None = None) -> bytes | bytearray:
        """The message; `into` when given (the buffer `data` lies in, with `margins` around it)."""
        size = memoryview(data).nbytes
        if size != self.height * step:
            raise ValueError(f"{size} pixel bytes, but {self.height} rows of {step} bytes are "
                             f"{self.height * step}")
        head = b"".join((ENCAPSULATION, STAMP.pack(sec, nanosec), self._before_step,
                         _STEP_AND_SIZE.pack(step, size)))
        return _around(head, data, b"", into)
