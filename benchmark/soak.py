"""Soak: fake_game (Polaris and Maxxum, real time, full rendering, a Vehicle Bridge each) -> a
sim_bridge and a vehicle_bridge per agent -> a subscriber on the sensor topics, while both vehicles
are driven by Ackermann commands at 10 Hz (a slow weave around the route's speed), for a long run.
Prints the resident memory (RSS) of every process at the start, every minute and at the end, and
what the subscriber received; the growth of each process over the second half says whether its
memory is flat after the warm-up. Not a test: run it by hand or `make soak`.

    python3 -m benchmark.soak [--seconds 900] [--agent-env maxxum GLIBC_TUNABLES=...]

--agent-env AGENT NAME=VALUE starts that agent's sim_bridge and vehicle_bridge with the variable
set, so that a setting (an allocator's, say) is measured beside the other agent's processes
without it, in the same run.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

from harness.graph import Graph, free_port
from harness.processes import start_bridge, start_module, start_vehicle_bridge

AGENTS = ("polaris", "maxxum")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=900.0)
    parser.add_argument("--command-hz", type=float, default=10.0)
    parser.add_argument("--agent-env", nargs=2, action="append", default=[],
                        metavar=("AGENT", "NAME=VALUE"),
                        help="an environment variable for that agent's bridges only")
    args = parser.parse_args()
    extra: dict[str, dict[str, str]] = {agent: {} for agent in AGENTS}
    for agent, setting in args.agent_env:
        if agent not in extra or "=" not in setting:
            parser.error(f"--agent-env takes one of {', '.join(AGENTS)} and NAME=VALUE, "
                         f"got {agent} {setting}")
        name, value = setting.split("=", 1)
        extra[agent][name] = value
    from ackermann_msgs.msg import AckermannDriveStamped
    from nav_msgs.msg import Odometry
    from rclpy.qos import QoSProfile
    from sensor_msgs.msg import Image, PointCloud2

    domain = 198
    ports = [free_port() for _ in AGENTS]
    vehicle_ports = [free_port() for _ in AGENTS]
    game = start_module("acres_sim.fake_game", [
        "--ports", ",".join(map(str, ports)), "--vehicles", ",".join(AGENTS),
        "--vehicle-ports", ",".join(map(str, vehicle_ports)), "--stats-period-s", "60"], domain)
    game.wait_for("ACRES_VEHICLE_BRIDGE_LISTENING agent=maxxum", 60)
    processes = {"fake_game": game}
    for index, (agent, port, vport) in enumerate(zip(AGENTS, ports, vehicle_ports)):
        processes[f"sim_bridge {agent}"] = start_bridge(
            port, domain, ["stats_period_s:=60.0", f"frame_prefix:={agent}/",
                           f"publish_clock:={'true' if index == 0 else 'false'}"], namespace=f"/{agent}",
            env_extra=extra[agent])
        processes[f"vehicle_bridge {agent}"] = start_vehicle_bridge(
            vport, domain, [f"frame_id:={agent}/base_footprint"], namespace=f"/{agent}",
            env_extra=extra[agent])
    graph = Graph(domain)
    try:
        counts = {"lidar": 0, "camera": 0, "ins": 0}
        topics = []
        for agent in AGENTS:
            for name, suffix, kind in (("lidar", "lidar/points", PointCloud2),
                                       ("camera", "camera/image_raw", Image), ("ins", "ins/odom", Odometry)):
                if name == "camera" and agent == "maxxum":
                    continue  # the Maxxum has no camera
                topic = f"/{agent}/{suffix}"
                graph.subscribe(kind, topic, QoSProfile(depth=10), keep=False,  # count only
                                callback=(lambda n: lambda _m: counts.__setitem__(n, counts[n] + 1))(name))
                topics.append(topic)
        graph.wait_matched(topics, 60)
        node = graph.node
        commands = {a: node.create_publisher(AckermannDriveStamped, f"/{a}/vehicle/ackermann_cmd", 10)
                    for a in AGENTS}
        graph.spin_until(lambda: all(p.get_subscription_count() > 0 for p in commands.values()), 60,
                         "vehicle_bridges")
        for proc, agent in ((processes[f"vehicle_bridge {a}"], a) for a in AGENTS):
            proc.wait_for(f"vehicle {agent} of agent {agent}", 60)
        period = 1.0 / args.command_hz
        sent = 0

        def drive_for(seconds: float) -> None:
            nonlocal sent
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                phase = sent * period
                for index, publisher in enumerate(commands.values()):
                    msg = AckermannDriveStamped()
                    msg.drive.speed = 2.5 + 0.5 * math.sin(phase / 7.0 + index)
                    msg.drive.steering_angle = 0.12 * math.sin(phase / 5.0 + index)
                    publisher.publish(msg)
                sent += 1
                graph.spin_for(period)

        drive_for(30.0)  # warm-up: imports, first renders, DDS buffers, the driven tracks
        start = time.monotonic()
        start_counts = dict(counts)
        names = list(processes)
        first = {n: rss_mb(processes[n].pid) for n in names}
        samples = [(0.0, dict(first))]
        print(f"{'t (s)':>6} " + " ".join(f"{n:>22}" for n in names) + "   RSS MB; received lidar/camera/ins")
        print(f"{0:6.0f} " + " ".join(f"{first[n]:22.1f}" for n in names), flush=True)
        while time.monotonic() - start < args.seconds:
            drive_for(min(60.0, args.seconds - (time.monotonic() - start)))
            now = {n: rss_mb(processes[n].pid) for n in names}
            elapsed = time.monotonic() - start
            samples.append((elapsed, now))
            got = {k: counts[k] - start_counts[k] for k in counts}
            print(f"{elapsed:6.0f} " + " ".join(f"{now[n]:22.1f}" for n in names)
                  + f"   {got['lidar']}/{got['camera']}/{got['ins']}", flush=True)
        elapsed = time.monotonic() - start
        got = {k: counts[k] - start_counts[k] for k in counts}
        half = next((s for s in samples if s[0] >= elapsed / 2), samples[-1])
        last = samples[-1][1]
        print(f"soak {elapsed:.0f} s, {sent} Ackermann commands per agent; received "
              f"{got['lidar'] / elapsed:.2f} clouds/s, {got['camera'] / elapsed:.2f} images/s, "
              f"{got['ins'] / elapsed:.1f} INS/s (both agents)")
        minutes = max((elapsed - half[0]) / 60.0, 1e-9)
        for n in names:
            print(f"  {n:24} RSS {first[n]:7.1f} -> {last[n]:7.1f} MB; second half "
                  f"{(last[n] - half[1][n]) / minutes:+.3f} MB/min; "
                  f"alive: {processes[n].proc.poll() is None}")
    finally:
        graph.close()
        for proc in processes.values():
            if proc is not game:
                proc.stop()
        game.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
