"""Soak: fake_game (Polaris, real time, full rendering) -> sim_bridge -> a subscriber on every topic,
for a long run; prints the resident memory (RSS) of the bridge and the fake game at the start, every
minute and at the end, plus what the subscriber received. Not a test: run it by hand or `make soak`.

    python3 -m benchmark.soak [--seconds 600]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from harness.graph import Graph, free_port
from harness.processes import start_bridge, start_module


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=600.0)
    args = parser.parse_args()
    from nav_msgs.msg import Odometry
    from rclpy.qos import QoSProfile
    from sensor_msgs.msg import Image, PointCloud2

    domain, port = 198, free_port()
    game = start_module("acres_sim.fake_game", ["--port", str(port), "--vehicle", "polaris",
                                                "--stats-period-s", "60"], domain)
    game.wait_for("ACRES_SENSOR_STREAM_LISTENING", 60)
    bridge = start_bridge(port, domain, ["stats_period_s:=60.0"], namespace="/polaris")
    graph = Graph(domain)
    try:
        for topic, kind in (("/polaris/lidar/points", PointCloud2), ("/polaris/camera/image_raw", Image),
                            ("/polaris/ins/odom", Odometry)):
            graph.subscribe(kind, topic, QoSProfile(depth=10), callback=lambda _m: None)
            graph.received[topic] = []  # count only, keep nothing
        counts = {"lidar": 0, "camera": 0, "ins": 0}
        for name, topic in (("lidar", "/polaris/lidar/points"), ("camera", "/polaris/camera/image_raw"),
                            ("ins", "/polaris/ins/odom")):
            sub = graph.subscriptions[topic]
            sub.callback = (lambda n: lambda _m: counts.__setitem__(n, counts[n] + 1))(name)
        graph.wait_matched(["/polaris/lidar/points", "/polaris/camera/image_raw", "/polaris/ins/odom"], 60)
        graph.spin_for(10.0)  # warm-up: imports, first renders, DDS buffers
        start = time.monotonic()
        start_counts = dict(counts)
        first = (rss_mb(bridge.proc.pid), rss_mb(game.proc.pid))
        print(f"{'t (s)':>7} {'bridge RSS (MB)':>16} {'fake_game RSS (MB)':>19}  received lidar/camera/ins")
        print(f"{0:7.0f} {first[0]:16.1f} {first[1]:19.1f}")
        next_report = start + 60.0
        while time.monotonic() - start < args.seconds:
            graph.spin_for(1.0)
            if time.monotonic() >= next_report or time.monotonic() - start >= args.seconds:
                next_report += 60.0
                got = {k: counts[k] - start_counts[k] for k in counts}
                print(f"{time.monotonic() - start:7.0f} {rss_mb(bridge.proc.pid):16.1f} "
                      f"{rss_mb(game.proc.pid):19.1f}  {got['lidar']}/{got['camera']}/{got['ins']}",
                      flush=True)
        last = (rss_mb(bridge.proc.pid), rss_mb(game.proc.pid))
        elapsed = time.monotonic() - start
        got = {k: counts[k] - start_counts[k] for k in counts}
        print(f"soak {elapsed:.0f} s: bridge RSS {first[0]:.1f} -> {last[0]:.1f} MB, fake_game RSS "
              f"{first[1]:.1f} -> {last[1]:.1f} MB; received {got['lidar'] / elapsed:.2f} clouds/s, "
              f"{got['camera'] / elapsed:.2f} images/s, {got['ins'] / elapsed:.1f} INS/s")
        print("bridge alive:", bridge.proc.poll() is None, " fake_game alive:", game.proc.poll() is None)
    finally:
        graph.close()
        bridge.stop()
        game.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
