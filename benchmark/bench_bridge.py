"""sim_bridge figures: delivery of Polaris clouds and images to a second process with default DDS
settings, with and without the bridge's Fast DDS large-data profile; the bridge's CPU share; the
reader's throughput; the cost of converting + publishing one frame of each type.

    python3 -m benchmark.bench_bridge [--seconds 10]

Prints figures only (no pass/fail): the machine is shared and noisy.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import threading
import time

import numpy as np


def reader_throughput(megabytes: int = 400) -> float:
    """MB/s that FrameReader pulls through a local socket pair (camera-sized frames)."""
    from acres_sim.stream import protocol
    from acres_sim.stream.protocol import FrameType
    from acres_sim.stream.frame_reader import FrameReader

    payload = protocol.encode_camera(np.zeros((512, 896, 3), np.uint8))
    data = protocol.encode_frame(FrameType.CAMERA, 0, 0.0, 0.0, payload)
    count = megabytes * 1_000_000 // len(data)
    a, b = socket.socketpair()

    def send() -> None:
        for _ in range(count):
            b.sendall(data)
        b.close()

    sender = threading.Thread(target=send, daemon=True)
    reader = FrameReader(a)
    t0 = time.perf_counter()
    sender.start()
    for _ in range(count):
        reader.read_frame()
    elapsed = time.perf_counter() - t0
    a.close()
    return count * len(data) / elapsed / 1e6


def publish_cost(repeats: int = 50) -> dict[str, float]:
    """Median ms to convert + publish one frame of each kind (no subscriber), in this process."""
    import rclpy
    from nav_msgs.msg import Odometry
    from sensor_msgs.msg import Image, PointCloud2

    from acres_sim.stream import protocol
    from acres_sim.convert.converter import FrameConverter
    from harness import converted
    from acres_sim.middleware.cdr_publisher import CdrPublisher
    from acres_sim.fake_game.simulation.vehicles import vehicle_hello
    from acres_sim.stream.protocol import FrameType

    hello = vehicle_hello("polaris")
    conv = FrameConverter(hello)
    rng = np.random.default_rng(0)
    cloud = protocol.decode_lidar(protocol.encode_lidar(rng.normal(size=(1800, 32, 4)).astype(np.float32)))
    image = protocol.decode_camera(protocol.encode_camera(rng.integers(0, 255, (512, 896, 3), np.uint8)))
    ins = np.zeros(protocol.INS_FIELDS)
    ins[protocol.Ins.EnuQw] = ins[protocol.Ins.TruthQw] = ins[protocol.Ins.UtmQw] = 1.0
    header = protocol.FrameHeader(FrameType.LIDAR, 1, 0, 1.0, 0.0)
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=199)
    node = rclpy.create_node("bench_publish", context=ctx)
    pubs = {"cloud": node.create_publisher(PointCloud2, "c", 5),
            "image": node.create_publisher(Image, "i", 5),
            "odom": node.create_publisher(Odometry, "o", 5)}
    wire = {name: CdrPublisher(pub) for name, pub in pubs.items()}
    out = {}
    jobs = {
        "lidar (serialize+publish, as the bridge)":
            lambda: wire["cloud"].publish(conv.pointcloud_cdr(header, cloud)),
        "lidar (deserialized to a message, rclpy publish)":
            lambda: pubs["cloud"].publish(converted.pointcloud(conv, header, cloud)),
        "camera (serialize+publish image, as the bridge)":
            lambda: wire["image"].publish(conv.image_cdr(header, image)),
        "camera (deserialized to a message, rclpy publish)":
            lambda: pubs["image"].publish(converted.image(conv, header, image)[0]),
        "ins (serialize 6, publish 1 of 6)":
            lambda: pubs["odom"].publish(conv.ins_cdr(header, ins).odom),
    }
    for name, job in jobs.items():
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            job()
            times.append((time.perf_counter() - t0) * 1e3)
        out[name] = float(np.median(times))
    node.destroy_node()
    rclpy.shutdown(context=ctx)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    from harness.delivery import measure_large_delivery

    print(f"FrameReader throughput over a socket pair: {reader_throughput():.0f} MB/s")
    for name, ms in publish_cost().items():
        print(f"publish cost {name}: {ms:.2f} ms")
    for label, profile in (("with the large-data profile", None), ("without a profile (off)", "off")):
        result = measure_large_delivery(198, seconds=args.seconds, profile=profile)
        print(f"== polaris, {args.seconds:.0f} s, {label}; subscriber process with default DDS settings")
        print(f"   bridge CPU {result['bridge_cpu_percent']:.1f} % of one core")
        for kind in ("lidar", "camera"):
            r = result[kind]
            print(f"   {kind:6s} sent {r['sent']:4d} received {r['received']:4d} missing {r['missing']:3d}  "
                  f"latency game->subscriber p50 {r['p50_ms']:.1f} ms p99 {r['p99_ms']:.1f} ms")
        print("   " + json.dumps({k: result[k] for k in ("lidar", "camera")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
