"""Latency and losses from publish to callback, per group of topics (clock, INS, LiDAR, camera),
from what a replay server sent and what the subscribers got: the local and the remote measurements
both count with these."""

from __future__ import annotations

from typing import Any

import numpy as np

from acres_sim.stream.protocol import FrameType


GROUPS = {FrameType.CLOCK: "clock", FrameType.INS: "INS", FrameType.LIDAR: "LiDAR",
          FrameType.CAMERA: "camera"}


def _stamp_ns(stamp: float) -> int:
    from acres_sim.convert.stamps import stamp_to_sec_nanosec

    sec, nanosec = stamp_to_sec_nanosec(stamp)
    return sec * 1_000_000_000 + nanosec


def _topic_kind(topic: str) -> int | None:
    if topic == "/clock":
        return FrameType.CLOCK
    if "/ins/" in topic or topic.startswith("/tf") or "ground_truth" in topic:
        return FrameType.INS
    if topic.endswith("lidar/points"):
        return FrameType.LIDAR
    if "/camera/" in topic:
        return FrameType.CAMERA
    return None


def latencies(sent: list[tuple[int, float, float]], received: dict[str, list[list[int]]], start: float,
              end: float) -> dict[str, dict[str, Any]]:
    """Per group (clock, INS, LiDAR, camera): every latency in ms (publish time -> callback) over
    all topics of the group, the messages expected and lost. Only frames published between start
    and end count."""
    by_kind: dict[int, dict[int, float]] = {}
    for kind, stamp, published in sent:
        if start <= published <= end:
            by_kind.setdefault(int(kind), {})[_stamp_ns(stamp)] = published
    out: dict[str, dict[str, Any]] = {name: {"ms": [], "messages": 0, "lost": 0} for name in GROUPS.values()}
    for topic, records in received.items():
        kind = _topic_kind(topic)
        if kind is None:
            continue
        got = {stamp: recv for stamp, recv in records}
        group = out[GROUPS[kind]]
        for stamp, published in by_kind.get(kind, {}).items():
            group["messages"] += 1
            if stamp in got:
                group["ms"].append((got[stamp] / 1e9 - published) * 1e3)
            else:
                group["lost"] += 1
    return out


def summary(runs: list[dict[str, dict[str, Any]]]) -> dict[str, dict[str, float]]:
    """p50 / p99 / max over the pooled latencies of several runs, messages and losses summed."""
    out = {}
    for name in GROUPS.values():
        lat = np.concatenate([np.asarray(r[name]["ms"], float) for r in runs]) if runs else np.array([])
        out[name] = {"p50_ms": float(np.percentile(lat, 50)) if lat.size else float("nan"),
                     "p99_ms": float(np.percentile(lat, 99)) if lat.size else float("nan"),
                     "max_ms": float(lat.max()) if lat.size else float("nan"),
                     "messages": int(sum(r[name]["messages"] for r in runs)),
                     "lost": int(sum(r[name]["lost"] for r in runs))}
    return out
