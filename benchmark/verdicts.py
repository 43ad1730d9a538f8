"""The performance targets, and how each measured figure stands against its target."""

from __future__ import annotations

from typing import Any

import numpy as np

from benchmark.latency import GROUPS


TARGETS = {
    "bridge CPU / floor CPU": ("<=", 1.25),
    "latency p50 / floor p50": ("<=", 1.25),
    "latency p99 / floor p99": ("<=", 1.5),
    "ingest / raw": (">=", 0.3),
    "ingest / polaris rate": (">=", 20.0),
    "no-op publisher flat out / raw": ("info", 0.0),
    "ingest / no-op publisher flat out": ("info", 0.0),
    "forwarder flat out / raw": ("info", 0.0),
    "ingest / forwarder flat out": ("info", 0.0),
    "bridge CPU / forwarder CPU": ("info", 0.0),
    "latency p50 / forwarder p50": ("info", 0.0),
    "latency p99 / forwarder p99": ("info", 0.0),
    "4 agents p99 / floor p99": ("<=", 2.0),
    "4 no-op publishers p99 / floor p99": ("info", 0.0),
    "lockstep ROS / control only": (">=", 0.8),
    "lockstep ROS / control only (learner loads the profile)": ("info", 0.0),
    "step_simulation learner / control channel alone": (">=", 0.5),
    "fake_game CPU (% of a core)": ("<=", 60.0),
    "lockstep reply -> sim/barrier through ROS (ms)": ("<=", 7.0),
    "held fake game, stream attached (cached renders): physics steps/s": (">=", 2000.0),
    "learner environment time / its floor's time": ("<=", 1.10),
    "learner environment with LiDAR observations: steps/s": (">=", 100.0),
    "learner environment, state / MetaDrive steps/s": (">=", 1.0),
    "learner environment, LiDAR / MetaDrive steps/s": (">=", 1.0 / 3.0),
    "remote / local messages, remote host loads fastdds_remote_host.xml": (">=", 0.99),
    "remote / local messages, remote host's defaults": ("info", 0.0),
}


def _ratio(a: float, b: float) -> float:
    return a / b if b else float("nan")


def verdicts(r: dict[str, Any]) -> list[tuple[str, float, str, bool | None]]:
    """(target, measured ratio or figure, limit text, met) for everything measured."""
    rows: list[tuple[str, float]] = []
    if "polaris" in r:
        p = r["polaris"]
        rows.append(("bridge CPU / floor CPU", _ratio(p["bridge_cpu_pct"], p["floor_cpu_pct"])))
        for group in GROUPS.values():
            b, f = p["bridge"][group], p["floor"][group]
            rows.append((f"latency p50 / floor p50 ({group})", _ratio(b["p50_ms"], f["p50_ms"])))
            rows.append((f"latency p99 / floor p99 ({group})", _ratio(b["p99_ms"], f["p99_ms"])))
        rows.append(("bridge CPU / forwarder CPU", _ratio(p["bridge_cpu_pct"], p["forwarder_cpu_pct"])))
        for group in GROUPS.values():  # the same against socket + middleware
            b, f = p["bridge"][group], p["forwarder"][group]
            rows.append((f"latency p50 / forwarder p50 ({group})", _ratio(b["p50_ms"], f["p50_ms"])))
            rows.append((f"latency p99 / forwarder p99 ({group})", _ratio(b["p99_ms"], f["p99_ms"])))
    if "ingest" in r and "raw" in r:  # measured in the same rounds (measure_throughput)
        rows.append(("ingest / raw", float(np.median(r["ingest"]["raw_ratio_per_round"]))))
        rows.append(("no-op publisher flat out / raw",
                     _ratio(r["ingest"]["floor"]["mb_per_s"], r["raw"]["mb_per_s"])))
        rows.append(("forwarder flat out / raw",
                     float(np.median(r["ingest"]["forwarder_raw_ratio_per_round"]))))
    if "ingest" in r:
        ingest = r["ingest"]
        rows.append(("ingest / no-op publisher flat out",
                     _ratio(ingest["mb_per_s"], ingest["floor"]["mb_per_s"])))
        rows.append(("ingest / forwarder flat out", float(np.median(ingest["forwarder_ratio_per_round"]))))
        rows.append(("ingest / polaris rate", _ratio(ingest["mb_per_s"], ingest["polaris_mb_per_s"])))
    if "agents4" in r and "polaris" in r:
        for group in GROUPS.values():
            a = r["agents4"]["worst_agent"].get(group)
            if a:
                rows.append((f"4 agents p99 / floor p99 ({group})",
                             _ratio(a["p99_ms"], r["polaris"]["floor"][group]["p99_ms"])))
            f = r["agents4"]["floor"]["worst_agent"].get(group)
            if f:
                rows.append((f"4 no-op publishers p99 / floor p99 ({group})",
                             _ratio(f["p99_ms"], r["polaris"]["floor"][group]["p99_ms"])))
    if "lockstep" in r:
        rows.append(("lockstep ROS / control only (default subscriber)", r["lockstep"]["default"]["ratio"]))
        rows.append(("lockstep ROS / control only (learner loads the profile)",
                     r["lockstep"]["profile"]["ratio"]))
    if "lockstep" in r:
        rows.append(("lockstep reply -> sim/barrier through ROS (ms)",
                     r["lockstep"]["default"]["reply_to_barrier_ms"]))
    if "gamerate" in r:
        rows.append(("held fake game, stream attached (cached renders): physics steps/s",
                     r["gamerate"]["stream_cached"]))
    if "learn" in r:
        for key, agents in (("state_1_agent", 1), ("state_2_agents", 2)):
            rows.append((f"learner environment time / its floor's time ({agents} agent(s))",
                         r["learn"][key]["env_over_floor"]))
        rows.append(("learner environment with LiDAR observations: steps/s",
                     r["learn"]["lidar_env_steps_per_s"]))
        peer = r["learn"].get("metadrive_steps_per_s")
        if peer:
            rows.append(("learner environment, state / MetaDrive steps/s",
                         r["learn"]["state_1_agent"]["env_steps_per_s"] / peer))
            rows.append(("learner environment, LiDAR / MetaDrive steps/s",
                         r["learn"]["lidar_env_steps_per_s"] / peer))
    for key, c in r.get("simcontrol", {}).items():
        agents, variant = key.split("_")
        rows.append((f"step_simulation learner / control channel alone ({agents} agent(s), {variant})",
                     c["ratio"]))
    if "fakegame" in r:
        rows.append(("fake_game CPU (% of a core)", r["fakegame"]["cpu_pct"]))
    for variant, label in (("remote_profile", "remote host loads fastdds_remote_host.xml"),
                           ("defaults", "remote host's defaults")):
        for name, figures in r.get("remote", {}).get(variant, {}).items():
            if name.startswith("remote "):
                for group in ("INS", "LiDAR", "camera"):
                    rows.append((f"remote / local messages, {label} ({name.split(' ', 1)[1]} {group})",
                                 figures[group]["share"]))
    out = []
    for name, value in rows:
        key = name if name in TARGETS else name.rsplit(" (", 1)[0]
        op, limit = TARGETS[key]
        if op == "info":  # a figure that explains a target, not a target
            out.append((name, value, "", None))
            continue
        met = value <= limit if op == "<=" else value >= limit
        out.append((name, value, f"{op} {limit:g}", bool(met)))
    return out
