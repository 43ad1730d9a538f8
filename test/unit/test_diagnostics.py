"""acres_sim.stream.diagnostics: the level, message and values of the /diagnostics status and the summary
line, from counters fed with explicit clocks (no graph)."""

from __future__ import annotations

from acres_sim.stream import diagnostics
from acres_sim.stream.diagnostics import StreamFacts, stream_status, summary_line
from acres_sim.stream.protocol import FrameType
from acres_sim.stream.stats import SnapshotHistory, StreamStats
from acres_sim.stream.client import StreamState

EXPECTED = {int(FrameType.CLOCK): 120.0, int(FrameType.INS): 100.0}


def _facts(state: StreamState = StreamState.CONNECTED, detail: str = "127.0.0.1:5601") -> StreamFacts:
    return StreamFacts(state, detail, "polaris", "polaris", "127.0.0.1:5601", EXPECTED, barrier_waits=0,
                       queued_frames=0, extra=(("compressed images encoded", "0"),))


def _run(ins_hz: float, seconds: int = 4, sim_speed: float = 1.0):
    """Clock at 120 Hz and INS at `ins_hz` of simulation time; wall time runs 1/sim_speed as fast."""
    stats, history = StreamStats(), SnapshotHistory(diagnostics.WINDOW_S)
    rates = None
    for step in range(seconds * 120 + 1):
        t = step / 120.0
        stats.frame(FrameType.CLOCK, 36, t, 0.0005, now=t / sim_speed)
        if step and (step * ins_hz) // 120 != ((step - 1) * ins_hz) // 120:  # ins_hz epochs a second
            stats.frame(FrameType.INS, 352, t, 0.001, now=t / sim_speed)
        if step % 120 == 0:  # a snapshot each second, the first once simulation time is known
            rates = history.add(stats.snapshot(now=t / sim_speed))
    return stats, stats.snapshot(now=seconds / sim_speed), rates


def test_a_healthy_stream_is_ok_with_every_value_named():
    stats, snap, rates = _run(ins_hz=100.0)
    assert rates.sim_seconds == 4.0  # a window long enough to judge rates
    level, message, values = stream_status(stats, snap, rates, _facts())
    kv = dict(values)
    assert (level, message) == (diagnostics.OK, "streaming")
    assert kv["connection"] == "connected" and kv["agent"] == "polaris"
    assert kv["ins expected rate (Hz)"] == "100.00"
    assert float(kv["clock rate (Hz)"]) == 120.0 and kv["compressed images encoded"] == "0"


def test_a_rate_off_in_simulation_time_warns_and_names_the_type():
    stats, snap, rates = _run(ins_hz=60.0)
    level, message, _ = stream_status(stats, snap, rates, _facts())
    assert level == diagnostics.WARN and "ins at 60.0 Hz of sim time, expected 100" in message


def test_slow_motion_is_not_a_rate_problem():
    """Lockstep or a realtime factor below 1: rates per wall second are low, per sim second right."""
    stats, snap, rates = _run(ins_hz=100.0, sim_speed=0.25)
    level, message, values = stream_status(stats, snap, rates, _facts())
    assert level == diagnostics.OK, message
    assert float(dict(values)["clock rate (Hz)"]) == 30.0


def test_drops_warn_and_a_lost_connection_is_an_error():
    stats, _, _ = _run(ins_hz=100.0)
    history = SnapshotHistory(diagnostics.WINDOW_S)
    history.add(stats.snapshot(now=4.0))
    stats.drop(FrameType.LIDAR)
    rates = history.add(stats.snapshot(now=5.0))
    level, message, _ = stream_status(stats, stats.snapshot(now=5.0), rates, _facts())
    assert level == diagnostics.WARN and "1 frames dropped by the bridge" in message
    level, message, values = stream_status(stats, stats.snapshot(now=5.0), rates,
                                           _facts(StreamState.DISCONNECTED, "connection refused"))
    assert level == diagnostics.ERROR and message == "disconnected: connection refused"
    assert dict(values)["drops"] == "1"


def test_summary_line_names_each_type_that_arrived_and_the_totals():
    stats, snap, _ = _run(ins_hz=100.0)
    base = StreamStats().snapshot(now=0.0)
    line = summary_line(stats, base, snap, "polaris", StreamState.CONNECTED)
    assert line.startswith("stream polaris connected | clock 120.2 Hz")  # 481 clocks in 4 s
    assert "| ins 100.0 Hz" in line and "lidar" not in line
    assert line.endswith("drops 0 bad 0 reconnects 0 gaps 0")
