"""The hand-offs between the bridge's threads (ROS-free): the bounded frame queue from the reader
thread to the publishing thread, and a one-item mailbox for work where only the newest item counts."""

from __future__ import annotations

import threading
from collections import deque

from acres_sim.stream.protocol import FrameType
from acres_sim.stream.client import Frame

HEAVY_TYPES = frozenset({FrameType.LIDAR, FrameType.CAMERA})


class HandoffQueue:
    """Bounded FIFO between the reader thread and the publishing thread.

    Heavy frames (LiDAR, camera) are refused when the queued payload bytes would exceed
    `max_bytes`; light frames (Hello, clock, INS, barrier) are refused only above `max_light`
    frames, a safety bound that a publishing thread that is alive never reaches. The consumer
    calls done() for every frame get() gave it once it has dealt with it; idle() is true while
    nothing is queued or being dealt with, so the producer may deal with a frame itself without
    overtaking an earlier one.
    """

    def __init__(self, max_bytes: int, max_light: int = 100_000):
        self.max_bytes = max_bytes
        self.max_light = max_light
        self._items: deque[Frame] = deque()
        self._bytes = 0
        self._light = 0
        self._taken = 0  # frames get() gave out and done() has not been called for
        self._cond = threading.Condition()
        self._closed = False

    def put(self, frame: Frame) -> bool:
        """Queue `frame`; False when it was dropped."""
        size = len(frame.payload)
        heavy = frame.header.type in HEAVY_TYPES
        with self._cond:
            if self._closed:
                return False
            if heavy and self._bytes + size > self.max_bytes:
                return False
            if not heavy and self._light >= self.max_light:
                return False
            self._items.append(frame)
            self._bytes += size
            self._light += 0 if heavy else 1
            self._cond.notify()
            return True

    def get(self, timeout_s: float | None = None) -> Frame | None:
        """The oldest frame, or None after `timeout_s` or when closed and empty."""
        with self._cond:
            if not self._items and not self._closed:
                self._cond.wait(timeout_s)
            if not self._items:
                return None
            frame = self._items.popleft()
            self._bytes -= len(frame.payload)
            self._light -= 0 if frame.header.type in HEAVY_TYPES else 1
            self._taken += 1
            return frame

    def done(self) -> None:
        """The consumer has dealt with a frame get() gave it."""
        with self._cond:
            self._taken -= 1

    def idle(self) -> bool:
        """Nothing queued and nothing taken but not done."""
        with self._cond:
            return not self._items and not self._taken

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    @property
    def queued_bytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._items)


class LatestSlot:
    """A one-item mailbox between two threads: put() replaces what was not taken yet (for work where
    only the newest item matters, such as encoding the latest image), get() waits for an item."""

    def __init__(self) -> None:
        self._item: object | None = None
        self._cond = threading.Condition()

    def put(self, item: object) -> bool:
        """Leave `item`; True when it replaced one that was never taken."""
        return self.replace(item) is not None

    def replace(self, item: object) -> object | None:
        """Leave `item`; the one it replaced (never taken), or None."""
        with self._cond:
            replaced, self._item = self._item, item
            self._cond.notify()
            return replaced

    def get(self, timeout_s: float | None = None) -> object | None:
        with self._cond:
            if self._item is None:
                self._cond.wait(timeout_s)
            item, self._item = self._item, None
            return item
