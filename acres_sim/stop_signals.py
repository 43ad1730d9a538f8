"""A process stopped by SIGINT or SIGTERM (ROS-free, a leaf).

The handlers only set a flag. A handler runs on the main thread between two bytecodes, so one that
takes a lock (threading.Event.set takes the event's) waits for good when the main thread holds that
lock at the moment (inside Event.wait), or a first handler does when a second signal lands: a node
whose runner was killed, and a fake game, were found hung so. The main loop polls the flag.
"""

from __future__ import annotations

import signal
import time
from typing import Any

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopFlag:
    def __init__(self) -> None:
        self._set = False

    def set(self) -> None:
        self._set = True

    def is_set(self) -> bool:
        return self._set

    def wait(self, poll_s: float = 0.1) -> None:
        while not self._set:
            time.sleep(poll_s)  # a handler runs in it; the sleep then goes on to its end (PEP 475)


def stop_on_signals() -> tuple[StopFlag, dict[int, Any]]:
    """A flag that SIGINT and SIGTERM set, and the handlers they had (for restore())."""
    stop = StopFlag()
    previous = {sig: signal.signal(sig, lambda _signum, _frame: stop.set()) for sig in SIGNALS}
    return stop, previous


def restore(previous: dict[int, Any]) -> None:
    for sig, handler in previous.items():
        signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
