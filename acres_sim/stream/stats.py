"""Rate, throughput, latency and error bookkeeping for one sensor stream (ROS-free).

The reader thread records every frame; the node reads consistent snapshots from other threads
(the 1 Hz diagnostics and the periodic summary line). Everything is bounded: latency samples live
in fixed-size ring buffers, snapshot history in a short deque.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from acres_sim.stream.protocol import FrameType

# Frame types the summary and the diagnostics always list, in this order.
REPORTED_TYPES = (FrameType.CLOCK, FrameType.INS, FrameType.LIDAR, FrameType.CAMERA, FrameType.BARRIER)
_LATENCY_SAMPLES = 4096  # per type: 34 s of clock frames, enough for a 10 s window at 120 Hz


@dataclass
class _TypeCounters:
    frames: int = 0
    bytes: int = 0
    bad: int = 0
    drops: int = 0
    last_stamp: float = float("nan")
    # (receipt time, latency ms) pairs; overwritten in a ring so memory stays fixed
    lat_time: np.ndarray = field(default_factory=lambda: np.full(_LATENCY_SAMPLES, -np.inf))
    lat_ms: np.ndarray = field(default_factory=lambda: np.zeros(_LATENCY_SAMPLES))
    lat_next: int = 0


@dataclass(frozen=True)
class TypeSnapshot:
    frames: int
    bytes: int
    bad: int
    drops: int
    last_stamp: float


@dataclass(frozen=True)
class StatsSnapshot:
    time: float  # time.monotonic() of the snapshot
    sim_time: float  # world time: the last Clock's stamp, or a later frame's; NaN before any frame
    types: dict[int, TypeSnapshot]
    bad_frames: int  # all bad frames, including those whose type is unknown
    reconnects: int
    sequence_gaps: int
    clock_offset_s: float  # world minus vehicle time from the latest Clock frame, NaN before one

    def type(self, frame_type: int) -> TypeSnapshot:
        return self.types.get(int(frame_type), TypeSnapshot(0, 0, 0, 0, float("nan")))

    @property
    def drops(self) -> int:
        return sum(t.drops for t in self.types.values())

    @property
    def total_bytes(self) -> int:
        return sum(t.bytes for t in self.types.values())


@dataclass(frozen=True)
class WindowRates:
    """Differences between two snapshots."""

    seconds: float  # wall-clock length of the window
    sim_seconds: float  # simulation time that passed in the window (NaN when unknown)
    rate_hz: dict[int, float]  # frames per wall-clock second
    sim_rate_hz: dict[int, float]  # frames per second of simulation time (NaN when unknown)
    mb_per_s: float
    new_drops: int
    new_bad_frames: int
    new_reconnects: int
    new_gaps: int


def window(old: StatsSnapshot, new: StatsSnapshot) -> WindowRates:
    seconds = max(new.time - old.time, 1e-9)
    sim_seconds = new.sim_time - old.sim_time
    rate: dict[int, float] = {}
    sim_rate: dict[int, float] = {}
    for t in set(old.types) | set(new.types):
        frames = new.type(t).frames - old.type(t).frames
        rate[t] = frames / seconds
        sim_rate[t] = frames / sim_seconds if sim_seconds > 0 else float("nan")
    return WindowRates(
        seconds=seconds,
        sim_seconds=sim_seconds,
        rate_hz=rate,
        sim_rate_hz=sim_rate,
        mb_per_s=(new.total_bytes - old.total_bytes) / seconds / 1e6,
        new_drops=new.drops - old.drops,
        new_bad_frames=new.bad_frames - old.bad_frames,
        new_reconnects=new.reconnects - old.reconnects,
        new_gaps=new.sequence_gaps - old.sequence_gaps,
    )


class StreamStats:
    """Thread-safe counters of one stream. Cheap to update: a lock and a few integer adds."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._types: dict[int, _TypeCounters] = {}
        self._bad_frames = 0
        self._reconnects = 0
        self._gaps = 0
        self._clock_offset = float("nan")
        self._sim_time = float("nan")

    def _counters(self, frame_type: int) -> _TypeCounters:
        counters = self._types.get(frame_type)
        if counters is None:
            counters = self._types[frame_type] = _TypeCounters()
        return counters

    def frame(self, frame_type: int, nbytes: int, stamp: float, latency_s: float,
              now: float | None = None) -> None:
        """One good frame: nbytes on the wire (header included), its stamp and transport time."""
        now = time.monotonic() if now is None else now
        with self._lock:
            c = self._counters(int(frame_type))
            c.frames += 1
            c.bytes += nbytes
            if frame_type != FrameType.HELLO:  # the Hello's stamp is 0 (or the Core's world time)
                c.last_stamp = stamp
                # The Clock frames are the world's time, in order: they set it, also back after a
                # TIME reset. The others (renders arrive after the clocks of later steps) raise it.
                if frame_type == FrameType.CLOCK or not stamp <= self._sim_time:  # NaN: not <=
                    self._sim_time = stamp
            i = c.lat_next
            c.lat_time[i] = now
            c.lat_ms[i] = latency_s * 1e3
            c.lat_next = (i + 1) % _LATENCY_SAMPLES

    def bad_frame(self, frame_type: int | None = None) -> None:
        with self._lock:
            self._bad_frames += 1
            if frame_type is not None:
                self._counters(int(frame_type)).bad += 1

    def drop(self, frame_type: int) -> None:
        with self._lock:
            self._counters(int(frame_type)).drops += 1

    def reconnect(self) -> None:
        with self._lock:
            self._reconnects += 1

    def sequence_gap(self) -> None:
        with self._lock:
            self._gaps += 1

    def clock_offset(self, offset_s: float) -> None:
        with self._lock:
            self._clock_offset = offset_s

    def snapshot(self, now: float | None = None) -> StatsSnapshot:
        now = time.monotonic() if now is None else now
        with self._lock:
            types = {t: TypeSnapshot(c.frames, c.bytes, c.bad, c.drops, c.last_stamp)
                     for t, c in self._types.items()}
            return StatsSnapshot(now, self._sim_time, types, self._bad_frames, self._reconnects,
                                 self._gaps, self._clock_offset)

    def latency_ms(self, frame_type: int, since: float) -> tuple[float, float, int]:
        """(p50, p99, samples) of the transport latency of frames received at or after `since`."""
        with self._lock:
            c = self._types.get(int(frame_type))
            if c is None:
                return float("nan"), float("nan"), 0
            values = c.lat_ms[c.lat_time >= since]
        if values.size == 0:
            return float("nan"), float("nan"), 0
        p50, p99 = np.percentile(values, (50, 99))
        return float(p50), float(p99), int(values.size)


class SnapshotHistory:
    """The snapshots of the last few seconds, to compute rates over a sliding window."""

    def __init__(self, window_s: float, max_entries: int = 64) -> None:
        self.window_s = window_s
        self._entries: deque[StatsSnapshot] = deque(maxlen=max_entries)

    def add(self, snapshot: StatsSnapshot) -> WindowRates | None:
        """Store `snapshot`; rates against the oldest snapshot within the window (None if none)."""
        while self._entries and snapshot.time - self._entries[0].time > self.window_s:
            self._entries.popleft()
        base = self._entries[0] if self._entries else None
        self._entries.append(snapshot)
        return None if base is None else window(base, snapshot)

    def clear(self) -> None:
        self._entries.clear()
