"""The buffer contract between the stream reader, the converter and the publisher (ROS-free).

A large LiDAR or camera payload is received into a PayloadBuffer of its own, with the margins (bytes
left free before and after it) that the PayloadLayout in force gives its type. The stream client
asks its owner for the layout of each Hello it reads (StreamClient's `layout_for`); the consumer
whose messages need those margins (the bridge's converter of that Hello) recognises them by the
layout the buffer carries and writes the message around the payload in place; any other buffer is
copied. The buffer is its consumers' until each released it; only then does the reader take it again.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from acres_sim.stream.protocol import FrameType

_NO_MARGINS = (0, 0)


@dataclass(frozen=True)
class PayloadLayout:
    """The bytes to leave before and after each large LiDAR and camera payload in its buffer, so that
    a consumer writes its message around the payload in place. Immutable: one per Hello; frames read
    before a Hello keep the layout they were read with (PayloadBuffer.layout), which is how the
    consumer knows whether the margins are its own."""

    lidar: tuple[int, int] = _NO_MARGINS
    camera: tuple[int, int] = _NO_MARGINS

    def margins(self, kind: int) -> tuple[int, int]:
        if kind == FrameType.LIDAR:
            return self.lidar
        if kind == FrameType.CAMERA:
            return self.camera
        return _NO_MARGINS


NO_MARGINS = PayloadLayout()


class PayloadBuffer:
    """One large payload in a buffer of its own: whole[offset:offset + size], with the margins of
    `layout` before and after it. Held by its consumers (the reader hands it out held once) until
    each calls release(); then the reader may use it for a later payload."""

    __slots__ = ("whole", "offset", "size", "layout", "_holders", "_lock")

    def __init__(self, size: int, layout: PayloadLayout, kind: int):
        before, after = layout.margins(kind)
        self.whole = bytearray(before + size + after)
        self.offset = before
        self.size = size
        self.layout = layout
        self._holders = 1
        self._lock = threading.Lock()

    @property
    def payload(self) -> memoryview:
        return memoryview(self.whole)[self.offset:self.offset + self.size]

    def hold(self) -> None:
        """One more consumer (e.g. a second thread that uses the payload later); it releases too."""
        with self._lock:
            self._holders += 1

    def release(self) -> None:
        """This consumer no longer uses the payload, nor any view of it."""
        with self._lock:
            self._holders -= 1

    def take_again(self) -> bool:
        """For the reader: True (and held once again) when every consumer released it."""
        with self._lock:
            if self._holders > 0:
                return False
            self._holders = 1
            return True
