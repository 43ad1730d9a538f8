"""The one table `python3 -m benchmark` prints, and the machine it ran on."""

from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import Any

from benchmark.latency import GROUPS


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
    for key, c in r.get("simcontrol", {}).items():
        agents, variant = key.split("_")
        label = "default readers" if variant == "default" else "everyone loads the profile"
        facts.add_row(f"step_simulation learner, {agents} agent(s), {label}: ROS / control only",
                      f"{c['ros_steps_per_s']:.0f} / {c['control_steps_per_s']:.0f} steps/s")
        facts.add_row("  call -> answer p50 / p99", f"{c['answer_ms_p50']:.1f} / {c['answer_ms_p99']:.1f} ms")
    driving = r.get("driving", {})
    if "latency" in driving:
        lat = driving["latency"]
        facts.add_row("command publish -> held by the game p50 / p99 (real time)",
                      f"{lat['publish_to_held']['p50_ms']:.2f} / {lat['publish_to_held']['p99_ms']:.2f} ms")
        if "publish_to_steering_report" in lat:
            rep = lat["publish_to_steering_report"]
            facts.add_row("command publish -> steering report shows it p50 / p99",
                          f"{rep['p50_ms']:.2f} / {rep['p99_ms']:.2f} ms")
    for key, d in driving.items():
        if key.startswith("learner_"):
            facts.add_row(f"lockstep learner acting every step, {len(d['agents'])} agent(s): "
                          "acting / watching",
                          f"{d['acting_steps_per_s']:.0f} / {d['watching_steps_per_s']:.0f} steps/s "
                          f"(answer p50 {d['acting_answer_ms_p50']:.1f} ms)")
    if "episode" in r:
        e = r["episode"]
        t = Table(title=f"The episode log: fake_game, {e['agents']} agents, lockstep, "
                        f"{e['requests']} x 12 steps")
        for col in ("", "CPU ms / step", "steps/s"):
            t.add_column(col, justify="right" if col else "left")
        for kind in ("simulate", "record", "replay"):
            t.add_row(kind, f"{e['cpu_ms_per_step'][kind]:.3f}", f"{e['steps_per_s'][kind]:.0f}")
        console.print(t)
        console.print(f"recording costs {e['record_extra_cpu_ms_per_step']:.3f} ms of CPU per physics step "
                      f"(median of the rounds' differences); the log grows "
                      f"{e['bytes_per_simulated_minute'] / 2**20:.2f} MiB per simulated minute "
                      f"({e['bytes_per_step']:.0f} bytes per step)")
    if "scenario" in r:
        sc = r["scenario"]
        t = Table(title=f"A scenario's cost per physics step ({sc['agents']} agents; us)")
        for col in ("objects", "collisions", "a vehicle pushing", "the judge (6 criteria)"):
            t.add_column(col, justify="right")
        for n in ("0", "1", "10", "100"):
            t.add_row(n, f"{sc['collisions_us'][n]:.1f}" if n in sc["collisions_us"] else "",
                      f"{sc['pushing_us'][n]:.1f}" if n in sc["pushing_us"] else "",
                      f"{sc['judge_us'][n]:.1f}" if n in sc["judge_us"] else "")
        console.print(t)
        console.print(f"scenario FILE -> first step {sc['first_step_wall_s']:.2f} s, first commanded step "
                      f"{sc['first_command_wall_s']:.2f} s, the whole 12 s run {sc['run_wall_s']:.1f} s")
    if "gamerate" in r:
        t = Table(title="The held fake game (Polaris): physics steps/s in 12-step requests, "
                        "by what is attached")
        for col in ("attached", "physics steps/s"):
            t.add_column(col, justify="right")
        for what, rate in r["gamerate"].items():
            t.add_row(what.replace("_", " "), f"{rate:.0f}")
        console.print(t)
    if "learn" in r:
        le = r["learn"]
        t = Table(title="The learners' environment against its floor, the channels doing only what a step "
                        "must (env steps of 12 physics steps, state observations)")
        for col in ("agents", "environment steps/s", "floor steps/s",
                    "environment / floor (time, median of 5)"):
            t.add_column(col, justify="right")
        for name, agents in (("state_1_agent", "1"), ("state_2_agents", "2")):
            f = le[name]
            t.add_row(agents, f"{f['env_steps_per_s']:.1f}", f"{f['floor_steps_per_s']:.1f}",
                      f"{f['env_over_floor']:.2f} x")
        console.print(t)
        console.print(f"the environment with LiDAR observations: {le['lidar_env_steps_per_s']:.1f} steps/s")
        if le.get("lidar_sweep"):
            console.print("a Polaris sweep rendered (1800 x 32 rays): compiled {compiled_ms:.1f} ms, with "
                          "NumPy's arrays {arrays_ms:.1f} ms ({arrays_over_compiled:.2f} x)"
                          .format(**le["lidar_sweep"]))
        peer = le.get("metadrive_steps_per_s")
        console.print("MetaDrive: not installed (pip install metadrive-simulator==0.4.3)" if peer is None else
                      f"MetaDrive (state + 240-beam LiDAR, light traffic): {peer:.1f} steps/s")
        one, two = le["sessions_steps_per_s"]["1"], le["sessions_steps_per_s"]["2"]
        console.print(f"reset: p50 {le['reset_p50_ms']:.0f} ms, p95 {le['reset_p95_ms']:.0f} ms; "
                      f"sessions at once: "
                      f"1 -> {one:.1f} steps/s, 2 -> {two:.1f} steps/s ({two / one:.2f} x)")
    if "campaign" in r:
        console.print(campaign_summary(r["campaign"]))
    if "search" in r:
        console.print(search_summary(r["search"]))
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


def campaign_summary(c: dict[str, Any]) -> str:
    """bench_campaign's figures (its own output and the report's): runs/min and a run's wall time
    beyond its stepping (median), warm sessions against fresh ones."""
    lines = [f"campaign of {c['runs']} runs ({c['world_s_per_run']:g} s of world time each) on {c['where']}:"]
    for key, rate in c["runs_per_min"].items():
        workers, sessions, *kept = key.split()
        how = f"{sessions} sessions" + (", the stack kept" if kept else "")
        nodes = c.get("nodes", {}).get(key)
        lines.append(f"  {workers} at once, {how}: {rate:6.2f} runs/min, "
                     f"{c['beyond_stepping_s'][key]:5.2f} s a run beyond its stepping (median)"
                     + (f", runs on {nodes} node{'s' * (nodes != 1)}" if nodes else ""))
    return "\n".join(lines)


def search_summary(r: dict[str, Any]) -> str:
    """bench_campaign's search against random draws, a line per seed."""
    lines = [f"failures found in {r['runs']} runs (a time to collision below 0.5 s, about 3 % of the "
             "space):"]
    for seed, f in r["seeds"].items():
        lines.append(f"  seed {seed}: random draws {f['random_failures']:3d}, search "
                     f"{f['search_failures']:3d} ({f['random_wall_s'] / 60:.1f} and "
                     f"{f['search_wall_s'] / 60:.1f} min)")
    return "\n".join(lines)


def machine() -> str:
    cpu = "?"
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                   if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return (f"{cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}, "
            f"Python {platform.python_version()}")
