"""Every measurement of `python3 -m benchmark`: latency and losses from publish to callback, the
flat-out throughputs, Polaris in real time beside its floors, four agents, lockstep, fake_game
and the remote subscribers."""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from acres_sim.stream.protocol import HEADER_SIZE, FrameHeader, FrameType
from harness.processes import DOMAINS, CpuWindow, Proc, json_result, ready, start_bridge, start_module
from benchmark.latency import GROUPS, latencies, summary
from harness.workload import Period, ReplayServer, connect_drain, raw_drain


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
    bridge = start_bridge(server.port, next(DOMAINS), {"stats_period_s": 1})
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
                                           str(tmp / "noop_flat.json"), "0"], next(DOMAINS))
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
                                                     str(server.port)], next(DOMAINS))
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
    from acres_sim.convert.converter import FrameConverter
    from acres_sim.convert.settings import ConvertSettings
    from acres_sim.stream.payloads import decode_payload

    kind, stamp, payload = next(f for f in period.frames if f[0] == FrameType.LIDAR)
    header = FrameHeader(kind, 0, len(payload), stamp, 0.0)
    data = decode_payload(kind, bytearray(payload))
    out = {}
    for fields in ("xyzi", "xyzirt"):
        conv = FrameConverter(period.hello, ConvertSettings(lidar_fields=fields, lidar_stamp="start"))
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            conv.pointcloud_cdr(header, data)  # what the bridge publishes
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
    ready(subscriber, ready_s)
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
    domain = next(DOMAINS)
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
    domain = next(DOMAINS)
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
                          next(DOMAINS))
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
    domain = next(DOMAINS)
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
    from acres_sim.nodes.launch_plan import plan_launch

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
    from acres_sim.fake_game.simulation.vehicles import vehicle_hello

    domain = next(DOMAINS)
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
            ready(subscriber)
            results: dict[str, list[dict]] = {}
            for mode in ("ros", "control", "ros", "control"):  # interleaved: load drifts
                learner = start_module("benchmark.learner", [str(control), str(requests), mode],
                                       domain, profile)
                results.setdefault(mode, []).append(json_result(learner))
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
    game = start_module("acres_sim.fake_game", ["--port", "0", "--vehicle", "polaris"], next(DOMAINS))
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
