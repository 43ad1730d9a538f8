"""What /diagnostics and the periodic summary line say about one sensor stream (ROS-free).

The node hands over the counters (StreamStats and its snapshots) and what it knows of the stream
(state, Hello, address); these functions decide the level, the message and the key/value pairs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from acres_sim.stream.protocol import type_name
from acres_sim.stream.stats import REPORTED_TYPES, StatsSnapshot, StreamStats, WindowRates, window
from acres_sim.stream.client import StreamState

OK, WARN, ERROR = 0, 1, 2  # diagnostic_msgs/DiagnosticStatus levels
WINDOW_S = 5.0  # problems are judged over the last 5 s
RATE_TOLERANCE = 0.10


def fmt(value: float, digits: int = 2) -> str:
    return "nan" if not math.isfinite(value) else f"{value:.{digits}f}"


@dataclass(frozen=True)
class StreamFacts:
    """What the node knows besides the counters."""

    state: StreamState
    detail: str
    agent: str
    vehicle: str
    address: str
    expected_hz: dict[int, float]  # per frame type, from the Hello
    barrier_waits: int  # times a barrier waited over a second for acknowledgements
    queued_frames: int
    extra: tuple[tuple[str, str], ...] = ()  # further key/value pairs of the node


def stream_status(stats: StreamStats, snap: StatsSnapshot, rates: WindowRates | None,
                  facts: StreamFacts) -> tuple[int, str, list[tuple[str, str]]]:
    """(level, message, key/value pairs) of the stream's DiagnosticStatus."""
    state = facts.state
    since = snap.time - WINDOW_S
    kv: list[tuple[str, str]] = [
        ("connection", state.value),
        ("connection detail", facts.detail),
        ("agent", facts.agent),
        ("vehicle", facts.vehicle),
        ("address", facts.address),
    ]
    problems: list[str] = []
    for kind in REPORTED_TYPES:
        name = type_name(kind)
        t = snap.type(kind)
        rate = rates.rate_hz.get(int(kind), 0.0) if rates else float("nan")
        sim_rate = rates.sim_rate_hz.get(int(kind), 0.0) if rates else float("nan")
        p50, p99, _ = stats.latency_ms(kind, since)
        exp = facts.expected_hz.get(int(kind))
        kv += [(f"{name} frames", str(t.frames)), (f"{name} rate (Hz)", fmt(rate)),
               (f"{name} rate in sim time (Hz)", fmt(sim_rate)),
               (f"{name} expected rate (Hz)", fmt(exp) if exp is not None else "-"),
               (f"{name} latency p50 (ms)", fmt(p50, 3)), (f"{name} latency p99 (ms)", fmt(p99, 3)),
               (f"{name} bad frames", str(t.bad)), (f"{name} drops", str(t.drops))]
        # Rates are judged per second of simulation time, so lockstep, pauses and realtime
        # factors other than 1 do not count as "off"; a window needs 2 s of sim time.
        if (exp and rates and state == StreamState.CONNECTED and rates.sim_seconds >= 2.0
                and abs(sim_rate - exp) > RATE_TOLERANCE * exp):
            problems.append(f"{name} at {sim_rate:.1f} Hz of sim time, expected {exp:g}")
    kv += [
        ("MB/s", fmt(rates.mb_per_s) if rates else "nan"),
        ("bad frames", str(snap.bad_frames)),
        ("drops", str(snap.drops)),
        ("reconnects", str(snap.reconnects)),
        ("sequence gaps", str(snap.sequence_gaps)),
        ("barrier waits over 1 s", str(facts.barrier_waits)),
        ("clock offset (s)", fmt(snap.clock_offset_s, 6)),
        ("queued frames", str(facts.queued_frames)),
        *facts.extra,
    ]
    if rates:
        if rates.new_drops:
            problems.append(f"{rates.new_drops} frames dropped by the bridge")
        if rates.new_bad_frames:
            problems.append(f"{rates.new_bad_frames} bad frames")
        if rates.new_gaps:
            problems.append(f"{rates.new_gaps} sequence gaps")
    if state != StreamState.CONNECTED:
        return ERROR, f"{state.value}: {facts.detail}", kv
    if problems:
        return WARN, "; ".join(problems), kv
    return OK, "streaming", kv


def summary_line(stats: StreamStats, base: StatsSnapshot, snap: StatsSnapshot, agent: str,
                 state: StreamState) -> str:
    """The one-line INFO summary of the period from `base` to `snap`."""
    rates = window(base, snap)
    parts = [f"stream {agent or '?'} {state.value}"]
    for kind in REPORTED_TYPES:
        t_new, t_old = snap.type(kind), base.type(kind)
        if t_new.frames == t_old.frames:
            continue
        p50, p99, _ = stats.latency_ms(kind, base.time)
        mb = (t_new.bytes - t_old.bytes) / rates.seconds / 1e6
        parts.append(f"{type_name(kind)} {rates.rate_hz.get(int(kind), 0.0):.1f} Hz {mb:.2f} MB/s "
                     f"p50 {fmt(p50)} p99 {fmt(p99)} ms")
    parts.append(f"total {rates.mb_per_s:.2f} MB/s drops {snap.drops} bad {snap.bad_frames} "
                 f"reconnects {snap.reconnects} gaps {snap.sequence_gaps}")
    return " | ".join(parts)
