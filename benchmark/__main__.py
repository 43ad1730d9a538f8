"""`python3 -m benchmark [--seconds 10] [--json FILE] [--only a,b] [--raw-subscriber]`: every
figure of the performance targets, measured side by side in one run; prints one table and writes
JSON. --raw-subscriber: the subscriber processes take serialized messages (no Python message built).

Measurements (names for --only):
  raw       an optimal reader (recv_into, reusable buffers) draining the served stream flat out
  ingest    sim_bridge reading, converting and publishing the same stream flat out, no subscriber;
            beside it the no-op publisher and the forwarder flat out; raw and ingest take turns
            three times (medians, and the median of each round's ratio)
  convert   converting one cloud: xyzi (bytes as sent) and xyzirt (ring + time), in this process
  polaris   the Polaris stream in real time, one subscriber process on every topic: latency from
            the frame's publish time (header, CLOCK_MONOTONIC) to the callback, losses, bridge CPU;
            beside it the no-op publisher (pre-built messages, same bytes, rates, QoS) = the floor,
            and the forwarder (the optimal reader + the floor's messages) = socket + middleware
  agents4   four Polaris streams, four bridges, one subscriber process for all of them; then four
            no-op publishers to one such subscriber (what is lost there is the subscriber's)
  lockstep  a learner stepping fake_game 12 steps at a time as fast as it can: waiting for
            sim/barrier through ROS vs waiting only for the control channel's reply
  fakegame  fake_game's CPU for one Polaris in real time with full rendering, and the time from a
            first client's connect to its first 1 s of frames at full rate
  remote    a reliable and a best-effort subscriber on a second host (a network namespace joined
            by a 1 Gbit/s veth; needs root) beside the same pair on the bridge's host: the share
            of the local subscriber's messages each gets, and latencies, with the remote host's
            defaults and with config/fastdds_remote_host.xml (benchmark.remote)
Ratios are what the targets are about: absolute figures drift with the machine's load.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from acres_sim.dds import shipped_environment
from benchmark.workload import (
    Period,
    ReplayServer,
    connect_drain,
    polaris_period,
    process_cpu_s,
    raw_drain,
)
from acres_sim.protocol import HEADER_SIZE, FrameHeader, FrameType

MEASUREMENTS = ("raw", "ingest", "convert", "polaris", "agents4", "lockstep", "fakegame", "remote")
GROUPS = {FrameType.CLOCK: "clock", FrameType.INS: "INS", FrameType.LIDAR: "LiDAR",
          FrameType.CAMERA: "camera"}
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
    "fake_game CPU (% of a core)": ("<=", 60.0),
    "remote / local messages, remote host loads fastdds_remote_host.xml": (">=", 0.99),
    "remote / local messages, remote host's defaults": ("info", 0.0),
}


# ---------------------------------------------------------------------------------------------
# Processes


class Proc:
    """A child process whose output lines are collected by a thread (so it never blocks on a pipe)."""

    def __init__(self, args: list[str], env: dict[str, str], name: str):
        self.name = name
        self.lines: list[str] = []
        self._new = threading.Condition()
        self.popen = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      text=True, bufsize=1)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.popen.stdout is not None
        for line in self.popen.stdout:
            with self._new:
                self.lines.append(line.rstrip("\n"))
                self._new.notify_all()

    @property
    def pid(self) -> int:
        return self.popen.pid

    def wait_line(self, predicate: Callable[[str], bool], timeout_s: float) -> str:
        deadline = time.monotonic() + timeout_s
        seen = 0
        with self._new:
            while True:
                for line in self.lines[seen:]:
                    if predicate(line):
                        return line
                seen = len(self.lines)
                left = deadline - time.monotonic()
                if left <= 0 or self.popen.poll() is not None:
                    tail = "\n  ".join(self.lines[-15:])
                    raise RuntimeError(f"{self.name}: expected line not seen in {timeout_s:.0f} s:\n  {tail}")
                self._new.wait(min(left, 0.2))

    def stop(self, timeout_s: float = 10.0) -> int:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGINT)
            try:
                self.popen.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        return self.popen.returncode


_DOMAINS = iter(range(100 + os.getpid() % 50 * 2, 232))


REPO = Path(__file__).resolve().parent.parent


def ros_env(domain: int) -> dict[str, str]:
    """This environment on an isolated graph; the child processes find the benchmark package (it is
    not installed) through PYTHONPATH."""
    env = dict(os.environ)
    env.update(ROS_DOMAIN_ID=str(domain), ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST", PYTHONUNBUFFERED="1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH", "")])))
    return env


def start_bridge(port: int, domain: int, params: dict[str, object] | None = None,
                 namespace: str | None = None) -> Proc:
    args = [sys.executable, "-m", "acres_sim.bridge", "--ros-args", "-p", f"port:={port}"]
    for key, value in (params or {}).items():
        args += ["-p", f"{key}:={value}"]
    if namespace:
        args += ["-r", f"__ns:={namespace}"]
    return Proc(args, ros_env(domain), f"sim_bridge {namespace or ''}")


def start_module(module: str, args: list[str], domain: int, profile: bool = False) -> Proc:
    env = ros_env(domain)
    if profile:  # a user process that loads the shipped Fast DDS profile file
        env.update(shipped_environment())
    return Proc([sys.executable, "-m", module, *args], env, module)


def _ready(proc: Proc, timeout_s: float = 60.0) -> None:
    proc.wait_line(lambda line: line.strip() == "READY", timeout_s)


class CpuWindow:
    """CPU seconds of some processes between start() and stop(), as % of one core."""

    def __init__(self, pids: list[int]):
        self.pids = pids

    def start(self) -> None:
        self._t0, self._cpu0 = time.monotonic(), [process_cpu_s(p) for p in self.pids]

    def stop(self) -> float:
        wall = time.monotonic() - self._t0
        return 100.0 * sum(process_cpu_s(p) - c for p, c in zip(self.pids, self._cpu0)) / wall


# ---------------------------------------------------------------------------------------------
# Latency and losses


def _stamp_ns(stamp: float) -> int:
    from acres_sim.convert import stamp_to_sec_nanosec

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


# ---------------------------------------------------------------------------------------------
# Measurements


def measure_raw(period: Period, seconds: float) -> dict[str, float]:
    server = ReplayServer(period, rate=0).start()
    try:
        return {"mb_per_s": raw_drain(server.port, seconds)}
    finally:
        server.stop()


def measure_ingest(period: Period, seconds: float) -> dict[str, float]:
    """Flat out into a bridge with no subscriber: what it read (the server's bytes, TCP pushes back)
    and what it published (read minus the heavy frames its bounded queue dropped)."""
    server = ReplayServer(period, rate=0).start()
    bridge = start_bridge(server.port, next(_DOMAINS), {"stats_period_s": 1})
    try:
        bridge.wait_line(lambda line: "static transforms on /tf_static" in line, 60)
        time.sleep(2.0)
        cpu = CpuWindow([bridge.pid])
        n0 = len(bridge.lines)
        b0, t0 = server.bytes_sent, time.monotonic()
        cpu.start()
        time.sleep(seconds)
        b1, t1 = server.bytes_sent, time.monotonic()
        cpu_pct = cpu.stop()
        time.sleep(1.2)
        drops = [int(line.split(" drops ")[1].split()[0]) for line in bridge.lines[max(0, n0 - 3):]
                 if " drops " in line]
        dropped = (drops[-1] - drops[0]) if len(drops) >= 2 else 0
    finally:
        bridge.stop()
        server.stop()
    heavy = [len(p) + HEADER_SIZE for k, _t, p in period.frames if k in (FrameType.LIDAR, FrameType.CAMERA)]
    read = (b1 - b0) / (t1 - t0) / 1e6
    published = read - dropped * float(np.mean(heavy)) / (t1 - t0) / 1e6
    return {"read_mb_per_s": read, "mb_per_s": max(published, 0.0), "dropped_frames": dropped,
            "cpu_pct": cpu_pct, "polaris_mb_per_s": period.payload_bytes / period.seconds / 1e6}


def _mb_per_s(proc: Proc, seconds: float) -> float:
    """The mean of the "MBPS <MB/s>" lines a flat-out process prints over `seconds`, once it has
    printed its first and then run for 1.5 s more."""
    proc.wait_line(lambda s: s.startswith("MBPS"), 60)
    time.sleep(1.5)
    first = len(proc.lines)
    time.sleep(seconds)
    rates = [float(x.split()[1]) for x in proc.lines[first:] if x.startswith("MBPS")]
    return float(np.mean(rates)) if rates else float("nan")


def measure_floor_flat_out(period: Period, seconds: float, tmp: Path) -> dict[str, float]:
    """The no-op publisher (pre-built messages) publishing the stream as fast as it can, no
    subscriber: the middleware's own limit for what `ingest` measures."""
    from benchmark.messages import bridge_topics

    noop = start_module("benchmark.noop", [json.dumps(bridge_topics(period.hello)),
                                           str(tmp / "noop_flat.json"), "0"], next(_DOMAINS))
    try:
        return {"mb_per_s": _mb_per_s(noop, seconds)}
    finally:
        noop.stop()


def measure_forwarder_flat_out(period: Period, seconds: float) -> dict[str, float]:
    """The forwarder (optimal reader + pre-built messages) draining the stream flat out, no
    subscriber: the socket's and the middleware's limit together for what `ingest` measures."""
    from benchmark.messages import bridge_topics

    server = ReplayServer(period, rate=0).start()
    forwarder = start_module("benchmark.forwarder", [json.dumps(bridge_topics(period.hello)),
                                                     str(server.port)], next(_DOMAINS))
    try:
        return {"mb_per_s": _mb_per_s(forwarder, seconds)}
    finally:
        forwarder.stop()
        server.stop()


def measure_throughput(period: Period, tmp: Path, raw_s: float, ingest_s: float, which: list[str],
                       rounds: int = 3) -> dict[str, dict[str, Any]]:
    """The raw reader and the bridge's ingest (with the no-op publisher and the forwarder flat out)
    in turns, `rounds` times: one window each drifts with the machine's load (the raw reader gave
    1530 and 3243 MB/s in two runs a few minutes apart), so the figures are medians and the ratio is
    the median of the ratios within each round."""
    raw: list[float] = []
    ingest: list[dict[str, Any]] = []
    for _ in range(rounds):
        if "raw" in which:
            raw.append(measure_raw(period, raw_s)["mb_per_s"])
        if "ingest" in which:
            ingest.append({**measure_ingest(period, ingest_s),
                           "floor": measure_floor_flat_out(period, ingest_s, tmp),
                           "forwarder": measure_forwarder_flat_out(period, ingest_s)})
    out: dict[str, dict[str, Any]] = {}
    if raw:
        out["raw"] = {"mb_per_s": float(np.median(raw)), "rounds": raw}
    if ingest:
        def median(key: str) -> float:
            return float(np.median([r[key] for r in ingest]))
        out["ingest"] = {"read_mb_per_s": median("read_mb_per_s"), "mb_per_s": median("mb_per_s"),
                         "dropped_frames": int(sum(r["dropped_frames"] for r in ingest)),
                         "cpu_pct": median("cpu_pct"), "polaris_mb_per_s": ingest[0]["polaris_mb_per_s"],
                         "floor": {"mb_per_s": float(np.median([r["floor"]["mb_per_s"] for r in ingest]))},
                         "forwarder": {"mb_per_s": float(np.median([r["forwarder"]["mb_per_s"]
                                                                   for r in ingest]))},
                         "rounds": ingest}
        if raw:
            out["ingest"]["raw_ratio_per_round"] = [i["mb_per_s"] / r for i, r in zip(ingest, raw)]
            out["ingest"]["forwarder_raw_ratio_per_round"] = [i["forwarder"]["mb_per_s"] / r
                                                              for i, r in zip(ingest, raw)]
        out["ingest"]["forwarder_ratio_per_round"] = [i["mb_per_s"] / i["forwarder"]["mb_per_s"]
                                                      for i in ingest]
    return out


def measure_convert(period: Period, repeats: int = 200) -> dict[str, float]:
    from acres_sim.convert import FrameConverter
    from acres_sim.parameters import ConvertSettings
    from acres_sim.protocol import decode_payload

    kind, stamp, payload = next(f for f in period.frames if f[0] == FrameType.LIDAR)
    header = FrameHeader(kind, 0, len(payload), stamp, 0.0)
    data = decode_payload(kind, bytearray(payload))
    out = {}
    for fields in ("xyzi", "xyzirt"):
        conv = FrameConverter(period.hello, ConvertSettings(lidar_fields=fields, lidar_stamp="start"))
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            conv.pointcloud_serialized(header, data)  # what the bridge publishes
            times.append(time.perf_counter() - t0)
        out[f"{fields}_ms"] = float(np.median(times) * 1e3)
    return out


# ["raw"] with --raw-subscriber: every subscriber process takes serialized messages (see subscriber.py)
SUBSCRIBER_MODE: list[str] = []


def _run_subscriber(spec: list[list[str]], domain: int, tmp: Path, name: str,
                    profile: bool = False) -> tuple[Proc, Path]:
    out = tmp / f"{name}.json"
    return start_module("benchmark.subscriber", [json.dumps(spec), str(out), *SUBSCRIBER_MODE],
                        domain, profile), out


def _measured(subscriber: Proc, pids: list[int], seconds: float,
              ready_s: float = 60.0) -> tuple[float, float, float]:
    """Once the subscriber has every topic and data flows: (CPU % of `pids` together, window start,
    end) over `seconds`; then a second for the window's last messages to arrive."""
    _ready(subscriber, ready_s)
    time.sleep(2.0)
    cpu = CpuWindow(pids)
    cpu.start()
    start = time.monotonic()
    time.sleep(seconds)
    end = time.monotonic()
    cpu_pct = cpu.stop()
    time.sleep(1.0)
    return cpu_pct, start, end


def _polaris_served(period: Period, spec: list[list[str]], seconds: float, tmp: Path,
                    who: str) -> tuple[float, dict]:
    """The paced stream read by the bridge or by the forwarder (`who`), one subscriber on every
    topic; latency from each frame's publish time in the stream."""
    domain = next(_DOMAINS)
    server = ReplayServer(period, rate=1.0).start()
    subscriber, sub_out = _run_subscriber(spec, domain, tmp, who)
    reader = (start_bridge(server.port, domain) if who == "bridge" else
              start_module("benchmark.forwarder", [json.dumps(spec), str(server.port)], domain))
    try:
        cpu_pct, start, end = _measured(subscriber, [reader.pid], seconds)
    finally:
        subscriber.stop()
        reader.stop()
        server.stop()
    return cpu_pct, latencies(server.sent.frames, json.loads(sub_out.read_text()), start, end)


def _polaris_floor(spec: list[list[str]], seconds: float, tmp: Path) -> tuple[float, dict]:
    domain = next(_DOMAINS)
    subscriber, sub_out = _run_subscriber(spec, domain, tmp, "floor")
    noop_out = tmp / "noop.json"
    noop = start_module("benchmark.noop", [json.dumps(spec), str(noop_out)], domain)
    try:
        cpu_pct, start, end = _measured(subscriber, [noop.pid], seconds)
    finally:
        subscriber.stop()
        noop.stop()
    return cpu_pct, latencies(json.loads(noop_out.read_text()), json.loads(sub_out.read_text()), start, end)


def _polaris_transport(period: Period, seconds: float) -> tuple[float, dict[str, list[float]]]:
    server = ReplayServer(period, rate=1.0).start()
    reader = start_module("benchmark.rawreader", [str(server.port), "2.0", str(seconds)],
                          next(_DOMAINS))
    try:
        run = json.loads(reader.wait_line(lambda s: s.startswith("{"), seconds + 60))
    finally:
        reader.stop()
        server.stop()
    by_group = {GROUPS[FrameType(int(k))]: v for k, v in run["latency_ms"].items() if int(k) in GROUPS}
    return run["cpu_pct"], by_group


def measure_polaris(period: Period, seconds: float, tmp: Path, repeats: int = 2) -> dict[str, Any]:
    """Transport floor, bridge, no-op publisher and forwarder, interleaved `repeats` times (the
    machine's load drifts; interleaving spreads it over all four), latencies pooled, CPU averaged."""
    from benchmark.messages import bridge_topics

    spec = bridge_topics(period.hello)
    cpu: dict[str, list[float]] = {"bridge": [], "floor": [], "forwarder": [], "transport": []}
    runs: dict[str, list[dict]] = {"bridge": [], "floor": [], "forwarder": []}
    transport: dict[str, list[float]] = {}
    each = seconds / repeats
    for _ in range(repeats):
        c, lat = _polaris_transport(period, each)
        cpu["transport"].append(c)
        for group, values in lat.items():
            transport.setdefault(group, []).extend(values)
        for who, run in (("bridge", lambda: _polaris_served(period, spec, each, tmp, "bridge")),
                         ("floor", lambda: _polaris_floor(spec, each, tmp)),
                         ("forwarder", lambda: _polaris_served(period, spec, each, tmp, "forwarder"))):
            c, lat = run()
            cpu[who].append(c)
            runs[who].append(lat)
    return {"bridge_cpu_pct": float(np.mean(cpu["bridge"])), "floor_cpu_pct": float(np.mean(cpu["floor"])),
            "transport_cpu_pct": float(np.mean(cpu["transport"])),
            "forwarder_cpu_pct": float(np.mean(cpu["forwarder"])),
            "cpu_runs": cpu, "bridge": summary(runs["bridge"]), "floor": summary(runs["floor"]),
            "forwarder": summary(runs["forwarder"]),
            "transport": {g: {"p50_ms": float(np.percentile(v, 50)), "p99_ms": float(np.percentile(v, 99)),
                              "max_ms": float(np.max(v))} for g, v in transport.items()}}


def _worst_agent(per_agent: list[dict[str, dict[str, float]]]) -> dict[str, dict[str, float]]:
    """Per topic group: the worst agent's p50 / p99 / max, messages and losses of all agents."""
    pooled = {}
    for name in GROUPS.values():
        rows = [a[name] for a in per_agent if a[name]["messages"]]
        pooled[name] = {"p50_ms": max(r["p50_ms"] for r in rows), "p99_ms": max(r["p99_ms"] for r in rows),
                        "max_ms": max(r["max_ms"] for r in rows),
                        "messages": sum(r["messages"] for r in rows),
                        "lost": sum(r["lost"] for r in rows)} if rows else {}
    return pooled


def _agents_run(plans: list[Any], spec: list[list[str]], seconds: float, tmp: Path, name: str,
                start_publishers: Callable[[int], list[tuple[Proc, Callable[[], list]]]]) -> dict[str, Any]:
    """One subscriber process on every topic of all agents; `start_publishers(domain)` starts one
    publisher process per plan and gives (process, its sent log once stopped)."""
    domain = next(_DOMAINS)
    subscriber, sub_out = _run_subscriber(spec, domain, tmp, name)
    publishers = start_publishers(domain)
    try:
        cpu_pct, start, end = _measured(subscriber, [p.pid for p, _ in publishers], seconds, ready_s=90.0)
    finally:
        subscriber.stop()
        for process, _ in publishers:
            process.stop()
    received = json.loads(sub_out.read_text())
    per_agent, topics = [], []
    for plan, (_, sent) in zip(plans, publishers):
        mine = {t: r for t, r in received.items()
                if t.startswith(plan.namespace + "/") or t.endswith(f" {plan.frame_prefix}base_footprint")
                or (t == "/clock" and plan.publish_clock)}
        per_agent.append(summary([latencies(sent(), mine, start, end)]))
        topics.append(sorted(t for t, r in mine.items() if r))
    return {"cpu_pct": cpu_pct, "worst_agent": _worst_agent(per_agent), "per_agent": per_agent,
            "topics": topics}


def measure_agents(period: Period, seconds: float, tmp: Path, count: int = 4) -> dict[str, Any]:
    """`count` bridges as the launch file runs them, each on a replay server, then `count` no-op
    publishers with the same topics and frames (the floor of that many agents), each time with one
    subscriber process on every topic: what is lost with no bridge at all is the subscriber's."""
    from benchmark.messages import bridge_topics
    from acres_sim.launch_plan import plan_launch

    servers = [ReplayServer(period, rate=1.0) for _ in range(count)]
    names = [f"polaris{i}" for i in range(count)]
    plans = plan_launch(",".join(names), ",".join(str(s.port) for s in servers)).bridges
    specs = [bridge_topics(period.hello, plan.namespace, clock=plan.publish_clock) for plan in plans]
    spec: list[list[str]] = []
    for own in specs:  # /tf is shared by all agents: one subscription
        spec += [s for s in own if s[0] != "/tf" or not any(t[0] == "/tf" for t in spec)]

    def bridges(domain: int) -> list[tuple[Proc, Callable[[], list]]]:
        started = []
        for plan, server in zip(plans, servers):
            bridge = start_bridge(plan.port, domain, {"frame_prefix": plan.frame_prefix,
                                                      "publish_clock": str(plan.publish_clock).lower()},
                                  plan.namespace)
            started.append((bridge, lambda server=server: server.sent.frames))
        for server in servers:
            server.start()
        return started

    def floors(domain: int) -> list[tuple[Proc, Callable[[], list]]]:
        started = []
        for i, (plan, own) in enumerate(zip(plans, specs)):
            out = tmp / f"noop_agent{i}.json"
            noop = start_module("benchmark.noop", [json.dumps(own), str(out), "1", plan.namespace,
                                                   plan.frame_prefix], domain)
            started.append((noop, lambda out=out: json.loads(out.read_text())))
        return started

    try:
        bridged = _agents_run(plans, spec, seconds, tmp, "agents", bridges)
    finally:
        for server in servers:
            server.stop()
    floor = _agents_run(plans, spec, seconds, tmp, "agents_floor", floors)
    return {"agents": count, "bridges_cpu_pct": bridged["cpu_pct"], "worst_agent": bridged["worst_agent"],
            "per_agent": bridged["per_agent"], "topics": bridged["topics"], "floor": floor}


def measure_lockstep(tmp: Path, requests: int, profile: bool = False) -> dict[str, Any]:
    """Learner steps/s through sim/barrier vs waiting for the control reply only, the same fake
    game (lockstep, --cached: the world is cheap, so the bridge's share shows), bridge and
    subscriber. With `profile`, the subscriber and the learner load that Fast DDS file."""
    from benchmark.messages import bridge_topics
    from acres_sim.fake_game.vehicles import vehicle_hello

    domain = next(_DOMAINS)
    game = start_module("acres_sim.fake_game", ["--port", "0", "--vehicle", "polaris", "--lockstep",
                                                "--cached", "--control-port", "0"], domain)
    try:
        port = int(game.wait_line(lambda s: s.startswith("ACRES_SENSOR_STREAM_LISTENING"), 60)
                   .split("port=")[1].split()[0])
        control = int(game.wait_line(lambda s: s.startswith("ACRES_SIM_CONTROL_LISTENING"), 60)
                      .split("port=")[1].split()[0])
        spec = bridge_topics(vehicle_hello("polaris")) + [["/sim/barrier", "UInt64", "sensor"]]
        subscriber, _ = _run_subscriber(spec[1:], domain, tmp, "lockstep", profile)  # held: no /clock yet
        bridge = start_bridge(port, domain)
        try:
            _ready(subscriber)
            results: dict[str, list[dict]] = {}
            for mode in ("ros", "control", "ros", "control"):  # interleaved: load drifts
                learner = start_module("benchmark.learner", [str(control), str(requests), mode],
                                       domain, profile)
                line = learner.wait_line(lambda s: s.startswith("{"), 120)
                try:  # it leaves the graph by itself: interrupted, its reader would stay matched
                    learner.popen.wait(30)
                except subprocess.TimeoutExpired:
                    pass
                learner.stop()
                results.setdefault(mode, []).append(json.loads(line))
        finally:
            subscriber.stop()
            bridge.stop()
    finally:
        game.stop()
    ros = float(np.mean([r["steps_per_s"] for r in results["ros"]]))
    ctl = float(np.mean([r["steps_per_s"] for r in results["control"]]))
    return {"ros_steps_per_s": ros, "control_steps_per_s": ctl, "ratio": ros / ctl,
            "reply_to_barrier_ms": float(np.mean([r["reply_to_barrier_ms"] for r in results["ros"]])),
            "barrier_timeouts": sum(r["barrier_timeouts"] for r in results["ros"]), "runs": results}


def measure_fake_game(seconds: float) -> dict[str, float]:
    """fake_game (real time, full rendering) with a client that reads everything."""
    game = start_module("acres_sim.fake_game", ["--port", "0", "--vehicle", "polaris"], next(_DOMAINS))
    clock_times: list[float] = []
    counts = {int(t): 0 for t in FrameType}
    stop = threading.Event()
    try:
        port = int(game.wait_line(lambda s: s.startswith("ACRES_SENSOR_STREAM_LISTENING"), 60)
                   .split("port=")[1].split()[0])
        drain = connect_drain(port)
        connected = time.monotonic()

        def read() -> None:
            try:
                while not stop.is_set():
                    kind, _size, _stamp, _published = drain.next()
                    counts[kind] += 1
                    if kind == FrameType.CLOCK:
                        clock_times.append(time.monotonic())
            except OSError:
                pass
        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        time.sleep(3.0)
        cpu = CpuWindow([game.pid])
        c0 = dict(counts)
        cpu.start()
        time.sleep(seconds)
        cpu_pct = cpu.stop()
        rates = {GROUPS[FrameType(k)]: (counts[k] - c0[k]) / seconds for k in GROUPS}
        stop.set()
        drain.sock.close()
    finally:
        game.stop()
    times = np.array(clock_times)
    # The first moment the latest second holds a full second of clock frames (120 at 120 Hz).
    full = next((t for i, t in enumerate(times) if i >= 119 and t - times[i - 119] <= 1.0 + 1.0 / 120),
                float("nan"))
    gaps = np.diff(times[times < connected + 3.0]) if times.size > 1 else np.array([np.nan])
    return {"cpu_pct": cpu_pct, "first_full_second_s": float(full - connected),
            "longest_clock_gap_first_3s_ms": float(gaps.max() * 1e3),
            **{f"{k}_hz": v for k, v in rates.items()}}


# ---------------------------------------------------------------------------------------------
# Report


def measure_remote_both(seconds: float, tmp: Path) -> dict[str, Any]:
    """The remote subscribers with their host's defaults, then with the shipped remote profile."""
    from benchmark.remote import REMOTE_PROFILE_NAME, HostsUnavailable, measure_remote
    from acres_sim.share import config_path

    try:
        return {"defaults": measure_remote(seconds, tmp),
                "remote_profile": measure_remote(seconds, tmp,
                                                 remote_profile=str(config_path(REMOTE_PROFILE_NAME)))}
    except HostsUnavailable as exc:
        print(f"remote: skipped: {exc}", file=sys.stderr)
        return {"skipped": str(exc)}


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


def print_report(r: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    console.print(f"[bold]acres_sim bench[/bold] on {r['machine']}")
    if "polaris" in r:
        p = r["polaris"]
        t = Table(title="Polaris in real time, one subscriber process on every topic")
        for col in ("", "p50 ms", "p99 ms", "max ms", "messages", "lost"):
            t.add_column(col, justify="right" if col else "left")
        for who in ("bridge", "floor", "forwarder"):
            for group in GROUPS.values():
                g = p[who][group]
                t.add_row(f"{who} {group}", f"{g['p50_ms']:.2f}", f"{g['p99_ms']:.2f}", f"{g['max_ms']:.2f}",
                          str(g["messages"]), str(g["lost"]))
        for group, g in p["transport"].items():
            t.add_row(f"socket only {group}", f"{g['p50_ms']:.2f}", f"{g['p99_ms']:.2f}",
                      f"{g['max_ms']:.2f}", "", "")
        console.print(t)
        console.print(f"CPU: bridge {p['bridge_cpu_pct']:.1f} %, no-op publisher {p['floor_cpu_pct']:.1f} %, "
                      f"forwarder {p['forwarder_cpu_pct']:.1f} %, optimal socket reader "
                      f"{p['transport_cpu_pct']:.1f} % of one core")
    if "agents4" in r:
        a = r["agents4"]
        t = Table(title=f"{a['agents']} Polaris agents, worst agent per topic group")
        for col in ("", "p50 ms", "p99 ms", "max ms", "messages", "lost"):
            t.add_column(col, justify="right" if col else "left")
        for who, worst in (("bridges", a["worst_agent"]), ("no-op publishers", a["floor"]["worst_agent"])):
            for group, g in worst.items():
                if g:
                    t.add_row(f"{who} {group}", f"{g['p50_ms']:.2f}", f"{g['p99_ms']:.2f}",
                              f"{g['max_ms']:.2f}", str(g["messages"]), str(g["lost"]))
        console.print(t)
        console.print(f"CPU: {a['agents']} bridges {a['bridges_cpu_pct']:.1f} %, {a['agents']} no-op "
                      f"publishers {a['floor']['cpu_pct']:.1f} % of one core")
    facts = Table(title="Throughput, lockstep, conversion, fake_game")
    facts.add_column("measurement")
    facts.add_column("figure", justify="right")
    if "raw" in r:
        rounds = " / ".join(f"{x:.0f}" for x in r["raw"]["rounds"])
        facts.add_row("raw reader (recv_into), median (rounds)",
                      f"{r['raw']['mb_per_s']:.0f} ({rounds}) MB/s")
    if "ingest" in r:
        i = r["ingest"]
        rounds = " / ".join(f"{x['mb_per_s']:.0f}" for x in i["rounds"])
        facts.add_row("bridge ingest, no subscriber: published", f"{i['mb_per_s']:.0f} ({rounds}) MB/s")
        facts.add_row("  read / frames dropped / bridge CPU",
                      f"{i['read_mb_per_s']:.0f} MB/s / {i['dropped_frames']} / {i['cpu_pct']:.0f} %")
        facts.add_row("no-op publisher flat out, no subscriber", f"{i['floor']['mb_per_s']:.0f} MB/s")
        rounds = " / ".join(f"{x['forwarder']['mb_per_s']:.0f}" for x in i["rounds"])
        facts.add_row("forwarder flat out, no subscriber",
                      f"{i['forwarder']['mb_per_s']:.0f} ({rounds}) MB/s")
    if "convert" in r:
        c = r["convert"]
        facts.add_row("one cloud: xyzi / xyzirt", f"{c['xyzi_ms']:.3f} / {c['xyzirt_ms']:.3f} ms")
    if "lockstep" in r:
        for variant, label in (("default", "default subscriber"), ("profile", "learner loads the profile")):
            s = r["lockstep"][variant]
            facts.add_row(f"lockstep steps/s, {label}: ROS / control only",
                          f"{s['ros_steps_per_s']:.0f} / {s['control_steps_per_s']:.0f}")
            facts.add_row("  reply -> sim/barrier", f"{s['reply_to_barrier_ms']:.1f} ms")
    if "fakegame" in r:
        g = r["fakegame"]
        facts.add_row("fake_game full rendering CPU", f"{g['cpu_pct']:.0f} % of a core")
        facts.add_row("connect -> first full second of frames", f"{g['first_full_second_s']:.2f} s")
        facts.add_row("longest clock gap in the first 3 s", f"{g['longest_clock_gap_first_3s_ms']:.0f} ms")
    console.print(facts)
    for variant, label in (("defaults", "the remote host's defaults"),
                           ("remote_profile", "the remote host loads config/fastdds_remote_host.xml")):
        figures = r.get("remote", {}).get(variant)
        if figures:
            t = Table(title=f"Subscribers on another host, {figures['rate']} link: {label}")
            for col in ("", "received", "share of local", "p50 ms", "p99 ms"):
                t.add_column(col, justify="right" if col else "left")
            for name in ("local reliable", "local best effort", "remote reliable", "remote best effort"):
                for group in ("INS", "LiDAR", "camera"):
                    g = figures[name][group]
                    t.add_row(f"{name} {group}", f"{g['messages'] - g['lost']}/{g['messages']}",
                              f"{100 * g['share']:.1f} %", f"{g['p50_ms']:.2f}", f"{g['p99_ms']:.2f}")
            console.print(t)
    v = Table(title="Targets (ratios within this run)")
    for col in ("target", "measured", "limit", ""):
        v.add_column(col)
    for name, value, limit, met in r["verdicts"]:
        verdict = "" if met is None else "[green]met[/green]" if met else "[red]missed[/red]"
        v.add_row(name, f"{value:.2f}", limit, verdict)
    console.print(v)


def machine() -> str:
    cpu = "?"
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                   if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return (f"{cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}, "
            f"Python {platform.python_version()}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m benchmark", description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each measured window")
    parser.add_argument("--json", default="acres_sim_bench.json", help="where to write the figures")
    parser.add_argument("--only", default=",".join(MEASUREMENTS),
                        help="comma list of " + ", ".join(MEASUREMENTS))
    parser.add_argument("--lockstep-requests", type=int, default=150)
    parser.add_argument("--raw-subscriber", action="store_true",
                        help="subscribers take serialized messages (rclpy raw=True), as a C++ user's would: "
                             "the middleware's delivery without Python building every message")
    args = parser.parse_args(argv)
    SUBSCRIBER_MODE[:] = ["raw"] if args.raw_subscriber else []
    only = [m.strip() for m in args.only.split(",") if m.strip()]
    unknown = set(only) - set(MEASUREMENTS)
    if unknown:
        parser.error(f"unknown measurement(s) {', '.join(sorted(unknown))}")
    period = polaris_period()
    results: dict[str, Any] = {"machine": machine(), "seconds": args.seconds,
                               "raw_subscriber": args.raw_subscriber,
                               "started": time.strftime("%Y-%m-%d %H:%M:%S")}
    with tempfile.TemporaryDirectory(prefix="acres_bench_") as tmp_dir:
        tmp = Path(tmp_dir)
        throughput = [m for m in ("raw", "ingest") if m in only]
        if throughput:
            print(f"measuring {' and '.join(throughput)} in turns ...", file=sys.stderr, flush=True)
            results.update(measure_throughput(period, tmp, min(args.seconds, 3.0), min(args.seconds, 5.0),
                                              throughput))
        steps = {"convert": lambda: measure_convert(period),
                 "polaris": lambda: measure_polaris(period, args.seconds, tmp),
                 "agents4": lambda: measure_agents(period, args.seconds, tmp),
                 "lockstep": lambda: {"default": measure_lockstep(tmp, args.lockstep_requests),
                                      "profile": measure_lockstep(tmp, args.lockstep_requests, True)},
                 "fakegame": lambda: measure_fake_game(args.seconds),
                 "remote": lambda: measure_remote_both(args.seconds, tmp)}
        for name in MEASUREMENTS:
            if name in only and name in steps:
                print(f"measuring {name} ...", file=sys.stderr, flush=True)
                results[name] = steps[name]()
    results["verdicts"] = verdicts(results)
    Path(args.json).write_text(json.dumps(results, indent=1))
    print_report(results)
    print(f"figures written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
