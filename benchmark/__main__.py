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
  simcontrol a learner written only with ROS (sim_control's step_simulation of 12 steps, then the
            step's cloud, image and odometry from its own subscriptions) against a learner on the
            control channel alone, one and two agents, a reliable subscriber on every topic; with
            the users' default readers and with everyone loading the bridge's profile
  driving   the command latency in real time (publish -> the vehicle holds it -> the steering
            report shows it), and the lockstep steps/s of a ROS-only learner that publishes an
            Ackermann command before every one-step step_simulation, beside the same learner
            stepping without commands; one and two agents
  fakegame  fake_game's CPU for one Polaris in real time with full rendering, and the time from a
            first client's connect to its first 1 s of frames at full rate
  episode   fake_game with two agents in lockstep on its control channel: simulating, recording the
            episode log, replaying it, in turns: CPU per physics step, steps/s, log bytes per minute
  scenario  what a scenario adds to a lockstep step (collisions of two agents among 0, 1, 10, 100
            objects, a vehicle pushing against one; the judge's six criteria) and the wall time from
            `scenario FILE` to its first step (benchmark.bench_scenario)
  gamerate  the held fake game's physics steps/s in 12-step requests with nothing attached, a watch
            feed, a watch of the latched events, the stream (cached renders), the stream (full
            renders) (benchmark.bench_game_rate)
  learn     the learners' environment: steps/s with state observations against its floor (the
            channels doing only what a step must), one and two agents; with LiDAR observations;
            reset p50/p95, aggregate steps/s of 1 and 2 sessions at once (benchmark.bench_learn)
  campaign  a campaign's runs per minute and a run's time beyond its stepping: warm sessions 1 and 2
            at once, 1 at once with the stack kept, fresh sessions 1 at once (benchmark.bench_campaign)
  search    failures found in 100 runs of one scenario by the search and by random draws, three
            seeds (about 40 min on 2 cores; benchmark.bench_campaign --search)
  remote    a reliable and a best-effort subscriber on a second host (a network namespace joined
            by a 1 Gbit/s veth; needs root) beside the same pair on the bridge's host: the share
            of the local subscriber's messages each gets, and latencies, with the remote host's
            defaults and with config/fastdds_remote_host.xml (benchmark.remote)
Ratios are what the targets are about: absolute figures drift with the machine's load.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmark.measure import (
    SUBSCRIBER_MODE,
    measure_agents,
    measure_convert,
    measure_fake_game,
    measure_lockstep,
    measure_polaris,
    measure_remote_both,
    measure_throughput,
)
from benchmark.measure_control import AGENT_SETS, measure_sim_control
from benchmark.measure_driving import measure_acting_learner, measure_command_latency
from benchmark.bench_campaign import measure_campaign, measure_search
from benchmark.bench_game_rate import measure_game_rate
from benchmark.bench_learn import measure_learn
from benchmark.bench_scenario import measure_scenario
from benchmark.measure_episode import measure_episode
from benchmark.report import machine, print_report
from benchmark.verdicts import verdicts
from harness.workload import polaris_period

MEASUREMENTS = ("raw", "ingest", "convert", "polaris", "agents4", "lockstep", "simcontrol", "driving",
                "fakegame", "episode", "scenario", "gamerate", "learn", "campaign", "search", "remote")


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
                 "simcontrol": lambda: {
                     f"{n}_{variant}": measure_sim_control(tmp, args.lockstep_requests, n,
                                                           profile=variant == "profile")
                     for n in (1, 2) for variant in ("default", "profile")},
                 "driving": lambda: {
                     "latency": measure_command_latency(),
                     **{f"learner_{n}": measure_acting_learner(args.lockstep_requests, AGENT_SETS[n])
                        for n in (1, 2)}},
                 "fakegame": lambda: measure_fake_game(args.seconds),
                 "episode": lambda: measure_episode(tmp, args.lockstep_requests),
                 "scenario": measure_scenario,
                 "gamerate": measure_game_rate,
                 "learn": measure_learn,
                 "campaign": measure_campaign,
                 "search": measure_search,
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
