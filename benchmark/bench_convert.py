#!/usr/bin/env python3
"""Per-message conversion cost of acres_sim.convert.converter for a Polaris cloud, image and INS epoch.

Side by side in the same run, it times the ways of filling msg.data of a 0.9 MB PointCloud2 and a
1.4 MB Image: what FrameConverter does (one copy into an array.array('B')), bytes(), and the naive
assignment of a numpy array (which the generated setter converts element by element), and prints
the naive / converter ratio. It also times rclpy's serializer on the result, the cost a publisher
pays next. Figures only, no pass/fail: machines differ.

    python3 -m benchmark.bench_convert [--repeat 200] [--naive-repeat 5]
"""

from __future__ import annotations

import argparse
import array
import statistics
import time
from collections.abc import Callable

import numpy as np
from rclpy.serialization import serialize_message
from sensor_msgs.msg import Image, PointCloud2


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    """(median, min) wall time of fn in milliseconds."""
    fn()  # warm up (imports, first allocation)
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1e3)
    return statistics.median(samples), min(samples)


def row(name: str, result: tuple[float, float] | None) -> None:
    if result is None:
        print(f"  {name:<60} refused by the generated setter (field checks on)")
    else:
        print(f"  {name:<60} median {result[0]:9.3f} ms   min {result[1]:9.3f} ms")


def timed_or_refused(fn: Callable[[], object], repeat: int) -> tuple[float, float] | None:
    """Like timed, but None when the message class refuses the value (ROS_PYTHON_CHECK_FIELDS=1)."""
    try:
        return timed(fn, repeat)
    except AssertionError:
        return None


def ratio(slow: tuple[float, float] | None, fast: tuple[float, float]) -> str:
    return "n/a (refused)" if slow is None else f"{slow[0] / fast[0]:.0f}x"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=200, help="runs of each fast variant")
    parser.add_argument("--naive-repeat", type=int, default=5, help="runs of the slow numpy assignment")
    args = parser.parse_args()

    from acres_sim.convert.converter import FrameConverter
    from harness import converted
    from acres_sim.fake_game.simulation.vehicles import vehicle_hello  # the protocol page's Polaris Hello
    from acres_sim.convert.settings import ConvertSettings
    from acres_sim.stream.protocol import (
        FrameHeader,
        FrameType,
        decode_camera,
        decode_ins,
        decode_lidar,
        encode_camera,
        encode_ins,
        encode_lidar,
    )

    rng = np.random.default_rng(1)
    hello = vehicle_hello("polaris")
    converter = FrameConverter(hello, ConvertSettings(frame_prefix="polaris/"))

    points = rng.uniform(-160, 160, (1800, 32, 4)).astype(np.float32)
    points[rng.random((1800, 32)) < 0.3, :3] = np.nan
    # bytearray + memoryview: the bridge's reader hands out views into a reused buffer like this.
    cloud_buffer = bytearray(encode_lidar(points))
    cloud = decode_lidar(memoryview(cloud_buffer))
    image_buffer = bytearray(encode_camera(rng.integers(0, 256, (512, 896, 3), dtype=np.uint8)))
    image = decode_camera(memoryview(image_buffer))
    ins_values = decode_ins(encode_ins(rng.normal(size=40)))
    stamp = 123.458333
    lidar_header = FrameHeader(int(FrameType.LIDAR), 1, len(cloud_buffer), stamp, 0.0)
    camera_header = FrameHeader(int(FrameType.CAMERA), 2, len(image_buffer), stamp, 0.0)
    ins_header = FrameHeader(int(FrameType.INS), 3, 320, stamp, 0.0)

    n = args.repeat
    checks = getattr(PointCloud2(), "_check_fields", True)  # distributions before Jazzy always check
    print(f"acres_sim.convert.converter, Polaris: cloud {len(cloud.point_bytes)} B (1800 x 32), "
          f"image {len(image.pixel_bytes)} B (896 x 512 bgr8); {n} runs each; generated field checks "
          f"{'ON' if checks else 'off'} (ROS_PYTHON_CHECK_FIELDS)")

    print("PointCloud2")
    cloud_msg = converted.pointcloud(converter, lidar_header, cloud)
    ours_cloud = timed(lambda: converter.pointcloud_cdr(lidar_header, cloud), n)
    row("FrameConverter.pointcloud_cdr (CDR, what the bridge publishes)", ours_cloud)
    row("FrameConverter.pointcloud (the same, deserialized to a message)",
        timed(lambda: converted.pointcloud(converter, lidar_header, cloud), n))
    xyzirt = FrameConverter(converter.hello, ConvertSettings(lidar_fields="xyzirt", lidar_stamp="start"))
    row("FrameConverter.pointcloud_cdr, lidar_fields:=xyzirt (24 B points)",
        timed(lambda: xyzirt.pointcloud_cdr(lidar_header, cloud), n))
    row("  of which is_dense = not isnan(points.min())",
        timed(lambda: not np.isnan(cloud.points.min()), n))
    row("  (for comparison: the strided isnan(points[..., :3]).any())",
        timed(lambda: not np.isnan(cloud.points[..., :3]).any(), n))

    def data_bytes() -> None:
        PointCloud2().data = bytes(cloud.point_bytes)

    def data_array() -> None:
        out = array.array("B")
        out.frombytes(cloud.point_bytes)
        PointCloud2().data = out

    cloud_numpy = np.frombuffer(cloud.point_bytes, np.uint8)

    def data_numpy() -> None:
        PointCloud2().data = cloud_numpy  # the naive way

    ours_data = timed(data_array, n)
    row("msg.data = array.array('B') filled by frombytes(view)", ours_data)
    row("msg.data = bytes(view)", timed(data_bytes, 3 if checks else n))
    naive_cloud = timed_or_refused(data_numpy, args.naive_repeat)
    row(f"msg.data = numpy uint8 array (naive; {args.naive_repeat} runs)", naive_cloud)
    row("rclpy serialize_message(cloud) (publisher side)", timed(lambda: serialize_message(cloud_msg), n))

    print("Image + CameraInfo")
    image_msg, _ = converted.image(converter, camera_header, image)
    ours_image = timed(lambda: converter.image_cdr(camera_header, image), n)
    row("FrameConverter.image_cdr (CDR, what the bridge publishes)", ours_image)
    row("FrameConverter.image (the same deserialized, + CameraInfo)",
        timed(lambda: converted.image(converter, camera_header, image), n))
    row("  of which camera_info", timed(lambda: converter.camera_info(camera_header), n))
    image_numpy = np.frombuffer(image.pixel_bytes, np.uint8)

    def image_data_numpy() -> None:
        Image().data = image_numpy

    naive_image = timed_or_refused(image_data_numpy, args.naive_repeat)
    row(f"msg.data = numpy uint8 array (naive; {args.naive_repeat} runs)", naive_image)
    row("rclpy serialize_message(image) (publisher side)", timed(lambda: serialize_message(image_msg), n))

    print("INS epoch (fix, imu, odom, odom_utm, ground truth, tf)")
    row("FrameConverter.ins_cdr (what the bridge publishes)",
        timed(lambda: converter.ins_cdr(ins_header, ins_values), n))
    row("FrameConverter.ins (the same, deserialized to messages)",
        timed(lambda: converted.ins(converter, ins_header, ins_values), n))
    row("FrameConverter.clock", timed(lambda: converter.clock(ins_header), n))

    print("Ratios (median, same run)")
    print(f"  cloud: naive numpy msg.data assignment / FrameConverter.pointcloud_cdr = "
          f"{ratio(naive_cloud, ours_cloud)}")
    print(f"  cloud: naive numpy msg.data assignment / array.array msg.data assignment = "
          f"{ratio(naive_cloud, ours_data)}")
    print(f"  image: naive numpy msg.data assignment / FrameConverter.image_cdr     = "
          f"{ratio(naive_image, ours_image)}")


if __name__ == "__main__":
    main()
