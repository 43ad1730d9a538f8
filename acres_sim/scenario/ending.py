"""One step of a run's end (ROS-free): it runs, and what fails is said, never raised, so that the
next step still runs; with a time limit it runs on a thread of its own and is left behind after that
long (a ROS node's close was once seen never to return, and a campaign run to wait out its
wall-clock limit after its world had ended)."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any


def end_step(what: str, step: Callable[[], Any], timeout_s: float | None = None) -> bool:
    """Run `step`; False when it did not finish within timeout_s (it is then left running)."""
    done = threading.Event()

    def run() -> None:
        try:
            step()
        except Exception as exc:  # noqa: BLE001 -- the end goes on; the line says what did not end well
            print(f"scenario: ending {what} failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        finally:
            done.set()

    if timeout_s is None:
        run()
        return True
    threading.Thread(target=run, name="scenario-ending", daemon=True).start()
    if done.wait(timeout_s):
        return True
    print(f"scenario: ending {what} did not finish within {timeout_s:g} s; the run ends without it",
          file=sys.stderr, flush=True)
    return False
