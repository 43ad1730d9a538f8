"""Render workers for the fake game's LiDAR sweeps and camera images."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future


class RenderPool:
    """Render workers on daemon threads, handing results back as Futures.

    Unlike ThreadPoolExecutor, whose workers the interpreter joins at exit, a render in progress
    (tens to hundreds of milliseconds on a busy machine) never holds up the end of the process.
    """

    def __init__(self, workers: int):
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._workers = workers
        for i in range(workers):
            threading.Thread(target=self._work, name=f"render-{i}", daemon=True).start()

    def submit(self, fn: Callable[..., object], *args: object) -> Future:
        future: Future = Future()
        self._jobs.put((future, fn, args))
        return future

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            future, fn, args = job
            if not future.set_running_or_notify_cancel():
                continue  # cancelled by shutdown
            try:
                future.set_result(fn(*args))
            except BaseException as exc:  # noqa: BLE001 -- handed to whoever waits on the future
                future.set_exception(exc)

    def shutdown(self) -> None:
        """Cancel what has not started; let the workers end after their current render."""
        while True:
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                break
            if job is not None:
                job[0].cancel()
        for _ in range(self._workers):
            self._jobs.put(None)
