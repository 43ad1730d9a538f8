#!/usr/bin/env python3
"""Cost of the fake_game world per sensor output, and the share of one core a real-time agent needs.

    python3 -m benchmark.bench_fake_world [--repeat N]

Prints the median and best wall time per LiDAR scan, camera image and INS epoch for each vehicle
(noise on, default scene, poses spread around the loop), and the load of one agent at the Hello
rates: a Polaris streams 10 clouds of 1800 x 32 rays and 10 images of 896 x 512 per second.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time


def timed(call, times: list[float]) -> tuple[float, float]:
    """(median, best) milliseconds of call(t) over the given times."""
    costs = []
    for t in times:
        start = time.perf_counter()
        call(t)
        costs.append((time.perf_counter() - start) * 1e3)
    return statistics.median(costs), min(costs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=40, help="samples per measurement")
    args = parser.parse_args()
    from acres_sim.fake_game.simulation.simulation import AgentSimulator
    from acres_sim.fake_game.simulation.vehicles import VEHICLES, vehicle_hello

    times = [0.1 + 2.3 * k for k in range(args.repeat)]  # different places on the loop
    for vehicle in VEHICLES:
        hello = vehicle_hello(vehicle)
        sim = AgentSimulator(hello, seed=42, noise=True)
        start = time.perf_counter()
        if hello.camera.enabled:
            sim.camera_image(0.0)  # builds the per-pixel rays once (cached per intrinsics)
        setup_ms = (time.perf_counter() - start) * 1e3
        lidar_med, lidar_best = timed(sim.lidar_points, times)
        ins_med, ins_best = timed(sim.ins_values, [k / hello.ins.hz for k in range(20 * args.repeat)])
        load_ms = hello.lidar.hz * lidar_med + hello.ins.hz * ins_med
        print(f"{vehicle}: lidar {hello.lidar.columns}x{hello.lidar.rings} "
              f"{lidar_med:.1f} ms median / {lidar_best:.1f} ms best per scan")
        print(f"{vehicle}: ins {ins_med * 1e3:.0f} us median / {ins_best * 1e3:.0f} us best per epoch")
        if hello.camera.enabled:
            cam_med, cam_best = timed(sim.camera_image, times)
            load_ms += hello.camera.hz * cam_med
            print(f"{vehicle}: camera {hello.camera.width}x{hello.camera.height} "
                  f"{cam_med:.1f} ms median / {cam_best:.1f} ms best per image "
                  f"(first image {setup_ms:.0f} ms with the ray table)")
        print(f"{vehicle}: real-time load {load_ms / 10.0:.0f} % of one core "
              f"({hello.lidar.hz:g} Hz lidar, {hello.camera.hz if hello.camera.enabled else 0:g} Hz camera, "
              f"{hello.ins.hz:g} Hz INS)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
