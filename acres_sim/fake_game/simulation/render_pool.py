"""The fake game's LiDAR sweeps and camera images: render workers, and each agent's render
scheduling (how many in flight, the cache of cached mode, publishing when done)."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import wait as wait_futures
from typing import Any

from acres_sim.fake_game.simulation.sinks import FrameSink
from acres_sim.stream.protocol import FrameType, encode_camera, encode_lidar


def frame_renderer(simulator: Any) -> Callable[[FrameType, float], bytes]:
    """The payload of an agent's LiDAR sweep or camera image at world time t."""
    def render(kind: FrameType, t: float) -> bytes:
        if kind == FrameType.LIDAR:
            return encode_lidar(simulator.lidar_points(t))
        return encode_camera(simulator.camera_image(t))
    return render


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


class AgentRenders:
    """One agent's LiDAR and camera renders: at most MAX_IN_FLIGHT on the pool at once (then the
    simulation waits, as the game's frame waits for its renderer), each published to the agent's
    stream when done. Cached mode renders CACHED_RENDERS of each kind once and then serves them again
    in turn with fresh stamps, so that the fake game costs little more than the copying of bytes."""

    MAX_IN_FLIGHT = 4
    CACHED_RENDERS = 5  # clouds and images re-served in cached mode (0.5 s of a 10 Hz sensor)
    STOP_POLL_S = 0.02  # a world waiting for its renderer looks at `stopping` this often

    def __init__(self, stream: FrameSink, render: Callable[[FrameType, float], bytes], *, cached: bool,
                 on_failure: Callable[[FrameType, BaseException], None]):
        self._stream = stream
        self._render_payload = render
        self._cached = cached
        self._on_failure = on_failure
        self._futures: list[Future] = []
        self._cache: dict[FrameType, list[bytes]] = {}
        self._served: dict[FrameType, int] = {}
        self._cache_lock = threading.Lock()

    def submit(self, pool: RenderPool, kind: FrameType, t: float, payload_size: int,
               stopping: Callable[[], bool]) -> None:
        """Render a frame of world time t on the pool, unless nobody would get it."""
        stream = self._stream
        if not stream.connected:
            return  # nobody would get it: do not spend the render
        if stream.would_drop(kind, payload_size):
            stream.count_drop(kind)  # the flow control would drop it: skip the render as well
            return
        self._futures = [f for f in self._futures if not f.done()]
        if not self._futures and self._served_from_cache(kind):
            self._render(kind, t)  # bytes already made: no worker's round trip for a copy
            return
        while len(self._futures) >= self.MAX_IN_FLIGHT:
            # The renderer is behind: the world waits for it, in short waits, so that stop is not
            # held up by a busy renderer.
            done, _ = wait_futures(self._futures[:1], timeout=self.STOP_POLL_S)
            if stopping():
                return
            if done:
                self._futures.pop(0).result()
        self._futures.append(pool.submit(self._render, kind, t))

    def wait(self) -> None:
        """Until every render submitted was published (raises what a render raised)."""
        for future in self._futures:
            future.result()
        self._futures.clear()

    def forget_cache(self) -> None:
        """The world changed (objects, conditions, a shift): cached mode renders afresh."""
        with self._cache_lock:
            self._cache.clear()
            self._served.clear()

    def _render(self, kind: FrameType, t: float) -> None:
        try:
            self._stream.publish(kind, t, self._payload(kind, t))
        except BaseException as exc:  # surface it: a broken renderer must not fail silently
            self._on_failure(kind, exc)
            raise

    def _served_from_cache(self, kind: FrameType) -> bool:
        if not self._cached:
            return False
        with self._cache_lock:
            return len(self._cache.get(kind, ())) >= self.CACHED_RENDERS

    def _payload(self, kind: FrameType, t: float) -> bytes:
        if not self._cached:
            return self._render_payload(kind, t)
        with self._cache_lock:
            cache = self._cache.setdefault(kind, [])
            served = self._served.get(kind, 0)
            self._served[kind] = served + 1
            if len(cache) >= self.CACHED_RENDERS:
                return cache[served % len(cache)]
        payload = self._render_payload(kind, t)
        with self._cache_lock:
            if len(cache) < self.CACHED_RENDERS:
                cache.append(payload)
        return payload
