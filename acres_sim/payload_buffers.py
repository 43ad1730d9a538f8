"""The buffer contract between the stream reader, the converter and the publisher (ROS-free).

A large LiDAR or camera payload is received into a PayloadBuffer of its own, with the room that
the PayloadLayout in force gives its type before and after it. The consumer that made the layout
(the bridge's converter, once per Hello) recognises its own room by the layout object the buffer
carries and writes the message around the payload in place; any other buffer is copied. The
buffer is its consumers' until each released it; only then does the reader take it again.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from acres_sim.protocol import FrameType

_NO_ROOM = (0, 0)


@dataclass(frozen=True)
class PayloadLayout:
    """The bytes to leave before and after each large LiDAR and camera payload in its buffer, so that
    a consumer writes its message around the payload in place. Immutable: the consumer makes one per
    Hello and gives it to the StreamClient; frames read before that keep the layout they were read
    with (PayloadBuffer.layout), which is how the consumer knows whether the room is its own."""

    lidar: tuple[int, int] = _NO_ROOM
    camera: tuple[int, int] = _NO_ROOM

    def room(self, kind: int) -> tuple[int, int]:
        if kind == FrameType.LIDAR:
            return self.lidar
        if kind == FrameType.CAMERA:
            return self.camera
        return _NO_ROOM


NO_ROOM = PayloadLayout()


class PayloadBuffer:
    """One large payload in a buffer of its own: whole[offset:offset + size], with the room of
    `layout` before and after it. Held by its consumers (the reader hands it out held once) until
    each calls release(); then the reader may use it for a later payload."""

    __slots__ = ("whole", "offset", "size", "layout", "_holders", "_lock")

    def __init__(self, size: int, layout: PayloadLayout, kind: int):
        before, after = layout.room(kind)
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
