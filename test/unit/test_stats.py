"""acres_sim.stream.stats: counters, windows and latency percentiles of one stream, with explicit clocks
(no sleeping, no graph)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from acres_sim.stream.protocol import FrameType
from acres_sim.stream.protocol import type_name
from acres_sim.stream.stats import SnapshotHistory, StreamStats, window


def _clocks(stats: StreamStats, n: int, t0: float, wall0: float, latency_s: float = 0.001) -> None:
    """n Clock frames at 120 Hz of simulation time, received at 120 Hz of wall time."""
    for i in range(n):
        stats.frame(FrameType.CLOCK, 36, t0 + i / 120.0, latency_s, now=wall0 + i / 120.0)


def test_frames_bytes_and_simulation_time_are_counted_per_type():
    stats = StreamStats()
    stats.frame(FrameType.HELLO, 900, 0.0, 0.0, now=1.0)  # the Hello's stamp is not simulation time
    _clocks(stats, 240, t0=5.0, wall0=1.0)
    stats.frame(FrameType.LIDAR, 921_632, 6.9, 0.004, now=3.0)
    snap = stats.snapshot(now=3.0)
    assert snap.type(FrameType.CLOCK).frames == 240 and snap.type(FrameType.CLOCK).bytes == 240 * 36
    assert snap.type(FrameType.LIDAR).frames == 1 and snap.total_bytes == 900 + 240 * 36 + 921_632
    assert snap.sim_time == pytest.approx(5.0 + 239 / 120.0)  # the newest stamp, not the cloud's
    assert snap.type(FrameType.CAMERA).frames == 0 and math.isnan(snap.type(FrameType.CAMERA).last_stamp)


def test_simulation_time_follows_the_clock_back_after_a_time_reset():
    stats = StreamStats()
    _clocks(stats, 240, t0=1 / 120, wall0=0.0)  # two seconds
    before = stats.snapshot(now=2.0)
    stats.frame(FrameType.LIDAR, 1000, 1.9, 0.004, now=2.0)  # a late render does not pull it back
    assert stats.snapshot(now=2.0).sim_time == pytest.approx(2.0)
    _clocks(stats, 12, t0=1 / 120, wall0=2.0)  # the world clock starts again at 0
    after = stats.snapshot(now=2.1)
    assert after.sim_time == pytest.approx(0.1)
    rates = window(before, after)  # a window across the jump has no simulation rate, not a negative one
    assert math.isnan(rates.sim_rate_hz[FrameType.CLOCK]) and rates.rate_hz[FrameType.CLOCK] > 0
    _clocks(stats, 120, t0=0.1 + 1 / 120, wall0=2.1)
    assert window(after, stats.snapshot(now=3.1)).sim_rate_hz[FrameType.CLOCK] == pytest.approx(120.0)


def test_a_window_gives_wall_and_simulation_rates_and_new_problems():
    stats = StreamStats()
    _clocks(stats, 120, t0=0.0, wall0=0.0)
    old = stats.snapshot(now=1.0)
    _clocks(stats, 240, t0=1.0, wall0=1.0)  # two more seconds of both
    stats.drop(FrameType.CAMERA)
    stats.bad_frame(FrameType.INS)
    stats.bad_frame()  # of an unknown type
    stats.sequence_gap()
    stats.reconnect()
    rates = window(old, stats.snapshot(now=3.0))
    assert rates.seconds == pytest.approx(2.0)
    assert rates.rate_hz[FrameType.CLOCK] == pytest.approx(120.0)
    assert rates.sim_rate_hz[FrameType.CLOCK] == pytest.approx(120.0, rel=0.01)
    assert (rates.new_drops, rates.new_bad_frames, rates.new_gaps, rates.new_reconnects) == (1, 2, 1, 1)
    assert rates.mb_per_s == pytest.approx(240 * 36 / 2.0 / 1e6)


def test_latency_percentiles_over_the_frames_since_a_time():
    stats = StreamStats()
    for i in range(100):
        stats.frame(FrameType.INS, 100, i / 100.0, (i + 1) / 1000.0, now=float(i))  # 1..100 ms
    p50, p99, n = stats.latency_ms(FrameType.INS, since=0.0)
    assert n == 100 and p50 == pytest.approx(50.5)
    assert p99 == pytest.approx(np.percentile(np.arange(1, 101), 99))
    p50, _, n = stats.latency_ms(FrameType.INS, since=90.0)  # the last ten: 91..100 ms
    assert n == 10 and p50 == pytest.approx(95.5)
    assert stats.latency_ms(FrameType.CAMERA, since=0.0)[2] == 0


def test_latency_memory_is_bounded_whatever_the_frame_count():
    stats = StreamStats()
    _clocks(stats, 10_000, t0=0.0, wall0=0.0)
    _, _, n = stats.latency_ms(FrameType.CLOCK, since=-1.0)
    assert n == 4096  # a ring: the newest 4096 samples


def test_snapshot_history_rates_against_the_oldest_snapshot_within_the_window():
    stats = StreamStats()
    history = SnapshotHistory(window_s=5.0)
    assert history.add(stats.snapshot(now=0.0)) is None
    for second in range(1, 9):
        _clocks(stats, 120, t0=second - 1.0, wall0=second - 1.0)
        rates = history.add(stats.snapshot(now=float(second)))
        assert rates is not None
        assert rates.seconds == pytest.approx(min(second, 5.0))  # older snapshots leave the window
        assert rates.rate_hz[FrameType.CLOCK] == pytest.approx(120.0)
    history.clear()
    assert history.add(stats.snapshot(now=9.0)) is None


def test_type_names():
    assert type_name(FrameType.LIDAR) == "lidar" and type_name(None) != "" and type_name(99) != ""
