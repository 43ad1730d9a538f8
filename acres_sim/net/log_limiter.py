"""Rate-limited fault logging (ROS-free): one line per kind of fault per period."""

from __future__ import annotations

import time
from collections.abc import Callable


class LogLimiter:
    """One log line per kind of fault per period: the first at once, repeats counted into the next.

    A stream that repeats one fault at 100 Hz must not flood the log, yet every new kind of fault
    is reported the moment it happens. At most MAX_KEYS kinds are remembered (then it starts over),
    so memory stays bounded whatever the peer sends.
    """

    MAX_KEYS = 256

    def __init__(self, period_s: float = 5.0, clock: Callable[[], float] = time.monotonic):
        self.period_s = period_s
        self._clock = clock
        self._last: dict[object, float] = {}
        self._suppressed: dict[object, int] = {}

    def allow(self, key: object) -> int | None:
        """None: stay silent; otherwise how many repeats were silenced since the last line."""
        now = self._clock()
        last = self._last.get(key)
        if last is not None and now - last < self.period_s:
            self._suppressed[key] = self._suppressed.get(key, 0) + 1
            return None
        if len(self._last) >= self.MAX_KEYS:  # whatever the peer sends, this stays small
            self._last.clear()
            self._suppressed.clear()
        self._last[key] = now
        return self._suppressed.pop(key, 0)

    def suffix(self, silenced: int) -> str:
        """What a line says of the repeats it stands for ("" when there were none)."""
        return f" ({silenced} more like it in the last {self.period_s:g} s)" if silenced else ""
