"""snapshot: subscribe to one agent's topics for a few seconds and render one PNG, no rviz2 needed.

    ros2 run acres_sim snapshot --seconds 5 --out snapshot.png --namespace /polaris

The picture (acres_sim.viewer.snapshot_render): the latest camera image; a bird's-eye view of every LiDAR
cloud of the period put into the world frame through /tf_static (the mount) and /tf (the vehicle
pose at the cloud's stamp), coloured by height, with the INS and ground-truth tracks; and the last
cloud as a range image. Exits 1, saying which, when a topic that has a publisher never delivered.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from acres_sim import topics
from acres_sim.viewer.snapshot_render import (
    FrameStore,
    SnapshotData,
    cloud_fields,
    render_png,
    transform_matrix,
)

MAX_CLOUDS = 100  # kept for the picture: 10 s of a 10 Hz LiDAR


def _stamp(header) -> float:
    return header.stamp.sec + header.stamp.nanosec * 1e-9


def _matrix(t) -> np.ndarray:
    tr, q = t.transform.translation, t.transform.rotation
    return transform_matrix((tr.x, tr.y, tr.z), (q.x, q.y, q.z, q.w))


@dataclass
class Collected:
    clouds: list = field(default_factory=list)  # (stamp, frame_id, (columns, rings, 3) float32)
    image: np.ndarray | None = None
    ins: list = field(default_factory=list)  # (x, y)
    truth: list = field(default_factory=list)
    base_frame: str = ""
    tf: list = field(default_factory=list)  # (stamp, parent, child, T)
    tf_static: list = field(default_factory=list)  # (parent, child, T)


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="snapshot", description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=5.0, help="how long to collect (5)")
    p.add_argument("--out", default="acres_snapshot.png", help="the PNG to write (acres_snapshot.png)")
    p.add_argument("--namespace", default="/polaris", help="the bridge's namespace (/polaris)")
    p.add_argument("--lidar-topic", default=topics.LIDAR_POINTS)
    p.add_argument("--image-topic", default=topics.CAMERA_IMAGE)
    p.add_argument("--odom-topic", default=topics.INS_ODOM)
    p.add_argument("--truth-topic", default=topics.GROUND_TRUTH_ODOM)
    p.add_argument("--wait-s", type=float, default=20.0,
                   help="how long to wait for the topics' publishers before collecting (20)")
    return p.parse_args(list(argv))


def _full(namespace: str, topic: str) -> str:
    return topic if topic.startswith("/") else f"{namespace.rstrip('/')}/{topic}"


@dataclass
class Subscriptions:
    got: Collected
    counts: dict[str, int]
    subs: dict
    topics: dict[str, str]

    def published(self) -> dict:
        """Which topics have a publisher, and their full names (for missing_topics)."""
        return {**{n: s.get_publisher_count() > 0 for n, s in self.subs.items()},
                **{f"{k}_topic": v for k, v in self.topics.items()}}


def collect(node, args: argparse.Namespace) -> tuple[Collected, dict[str, int], dict[str, bool]]:
    """Subscribe, wait for the bridge's publishers, collect for args.seconds."""
    import rclpy

    s = subscribe(node, args)
    deadline = time.monotonic() + args.wait_s
    # A camera-less vehicle has no image publisher: wait only for the ones every vehicle has.
    while time.monotonic() < deadline and not all(
            s.subs[n].get_publisher_count() for n in ("lidar", "odom", "tf_static")):
        rclpy.spin_once(node, timeout_sec=0.1)
    published = s.published()
    end = time.monotonic() + args.seconds
    while time.monotonic() < end:
        rclpy.spin_once(node, timeout_sec=0.05)
    return s.got, s.counts, published


def subscribe(node, args: argparse.Namespace) -> Subscriptions:
    from nav_msgs.msg import Odometry
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import Image, PointCloud2
    from tf2_msgs.msg import TFMessage

    got = Collected()
    counts: dict[str, int] = {}
    names = {name: _full(args.namespace, t) for name, t in (
        ("lidar", args.lidar_topic), ("image", args.image_topic), ("odom", args.odom_topic),
        ("truth", args.truth_topic))}
    names["tf"], names["tf_static"] = topics.TF, topics.TF_STATIC

    def counted(name, fn):
        def callback(msg) -> None:
            counts[name] = counts.get(name, 0) + 1
            fn(msg)
        return callback

    def on_cloud(msg) -> None:
        fields = [(f.name, f.offset, f.datatype) for f in msg.fields]
        points = cloud_fields(bytes(msg.data), fields, msg.point_step, msg.width * msg.height)
        xyz = np.stack([points["x"], points["y"], points["z"]], axis=-1).reshape(msg.height, msg.width, 3)
        got.clouds.append((_stamp(msg.header), msg.header.frame_id, xyz))
        del got.clouds[:-MAX_CLOUDS]

    def on_image(msg) -> None:
        rows = np.frombuffer(bytes(msg.data), np.uint8).reshape(msg.height, msg.step)
        got.image = rows[:, : 3 * msg.width].reshape(msg.height, msg.width, 3)

    def on_odom(track):
        def callback(msg) -> None:
            p = msg.pose.pose.position
            track.append((p.x, p.y))
            got.base_frame = msg.child_frame_id
        return callback

    def on_tf(msg) -> None:
        for t in msg.transforms:
            got.tf.append((_stamp(t.header), t.header.frame_id, t.child_frame_id, _matrix(t)))

    def on_tf_static(msg) -> None:
        for t in msg.transforms:
            got.tf_static.append((t.header.frame_id, t.child_frame_id, _matrix(t)))

    sensor = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
    subs = {
        "lidar": node.create_subscription(PointCloud2, names["lidar"], counted("lidar", on_cloud), sensor),
        "image": node.create_subscription(Image, names["image"], counted("image", on_image), sensor),
        "odom": node.create_subscription(Odometry, names["odom"], counted("odom", on_odom(got.ins)), sensor),
        "truth": node.create_subscription(Odometry, names["truth"], counted("truth", on_odom(got.truth)),
                                          sensor),
        "tf": node.create_subscription(TFMessage, topics.TF, counted("tf", on_tf), QoSProfile(depth=100)),
        "tf_static": node.create_subscription(
            TFMessage, topics.TF_STATIC, counted("tf_static", on_tf_static),
            QoSProfile(depth=10, durability=DurabilityPolicy.TRANSIENT_LOCAL)),
    }
    return Subscriptions(got, counts, subs, names)


def build_snapshot(got: Collected, title: str) -> SnapshotData:
    """Put every cloud into the world frame at its own stamp."""
    store = FrameStore(base=got.base_frame or "base_footprint")
    for parent, child, transform in got.tf_static:
        store.add_static(parent, child, transform)
    for stamp, parent, child, transform in got.tf:
        if child == store.base:
            store.world = parent
            store.add_world_pose(stamp, transform)
    world, used = [], 0
    for stamp, frame_id, xyz in got.clouds:
        to_world = store.lookup(frame_id, stamp)
        if to_world is None:
            continue
        pts = xyz.reshape(-1, 3)
        pts = pts[np.isfinite(pts).all(axis=1)]
        world.append(pts @ to_world[:3, :3].T + to_world[:3, 3])
        used += 1
    last = got.clouds[-1][2] if got.clouds else None
    return SnapshotData(
        title=title,
        image_bgr=got.image,
        world_points=np.concatenate(world).astype(np.float32) if world else np.zeros((0, 3), np.float32),
        range_image=np.linalg.norm(last, axis=-1) if last is not None else None,
        ins_track=np.array(got.ins).reshape(-1, 2),
        truth_track=np.array(got.truth).reshape(-1, 2),
        clouds=used,
    )


def missing_topics(counts: dict[str, int], info: dict) -> list[str]:
    """Topics that never delivered although they must (the image only where it has a publisher)."""
    required = ["lidar", "odom", "truth", "tf", "tf_static"] + (["image"] if info.get("image") else [])
    return [info[f"{name}_topic"] for name in required if not counts.get(name)]


def main(argv: Sequence[str] | None = None) -> int:
    import rclpy
    from rclpy.utilities import remove_ros_args

    argv = sys.argv if argv is None else list(argv)
    args = parse_args(remove_ros_args(argv)[1:])
    rclpy.init(args=argv)
    node = rclpy.create_node("snapshot")
    try:
        got, counts, info = collect(node, args)
    except KeyboardInterrupt:
        return 130
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
    missing = missing_topics(counts, info)
    if missing:
        print(f"snapshot: no message within {args.seconds:g} s on {', '.join(missing)}: is sim_bridge "
              f"running in namespace {args.namespace} and the game streaming? (ros2 topic list shows what "
              "is there)", file=sys.stderr)
        return 1
    data = build_snapshot(got, f"acres_sim snapshot of {args.namespace}: {args.seconds:g} s, "
                               f"{counts.get('lidar', 0)} clouds, {counts.get('image', 0)} images")
    if data.clouds == 0:
        print("snapshot: no cloud could be put into the world frame (no /tf pose near the cloud stamps?)",
              file=sys.stderr)
        return 1
    out = render_png(data, args.out)
    print(f"snapshot: wrote {out.resolve()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
