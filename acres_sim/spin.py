"""An rclpy executor spinning in a thread of its own, for nodes whose main thread waits for a signal."""

from __future__ import annotations

import threading
from typing import Any

from rclpy.executors import ExternalShutdownException


def spin_in_thread(executor: Any, stop: threading.Event, failures: list[BaseException],
                   name: str) -> threading.Thread:
    """Start executor.spin() in a daemon thread. spin() sleeps until something is due (a main thread
    polling spin_once(0.1) rebuilt the wait set ten times a second). When it ends, `stop` is set; an
    error in a callback goes into `failures`, for the main thread to raise: it ends the node."""

    def run() -> None:
        try:
            executor.spin()
        except ExternalShutdownException:
            pass
        except BaseException as exc:  # noqa: BLE001 -- handed to the main thread, which raises it
            failures.append(exc)
        finally:
            stop.set()

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    return thread
