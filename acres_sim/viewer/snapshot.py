"""snapshot: subscribe to one agent's topics for a few seconds and render one PNG, no rviz2 needed.

    ros2 run acres_sim snapshot --seconds 5 --out snapshot.png --namespace /polaris

The picture (acres_sim.viewer.snapshot_render): the latest camera image; a bird's-eye view of every LiDAR
cloud of the period put into the world frame through /tf_static (the mount) and /tf (the vehicle
pose at the cloud's stamp), coloured by height, with the INS and ground-truth tracks, the vehicles'
outlines (every agent's from /sim/agents and /sim/agent_states where sim_control runs, else this
agent's from its robot_description at its last ground-truth pose) and the objects of /sim/markers;
and the last cloud as a range image. Exits 1, saying which, when a topic that has a publisher never
delivered.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from acres_sim import topics
from acres_sim.rotations import quaternion_yaw
from acres_sim.viewer.snapshot_render import (
    FrameStore,
    Outline,
    SnapshotData,
    body_from_urdf,
    cloud_fields,
    marker_outlines,
    render_png,
    transform_matrix,
    vehicle_outline,
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
    pose: tuple[float, float, float] | None = None  # the last ground truth: x, y, yaw
    description: str = ""  # the agent's robot_description
    markers: list = field(default_factory=list)  # the last /sim/markers, as marker_outlines takes them
    agents: dict = field(default_factory=dict)  # /sim/agents: name -> (length, width, rear overhang)
    agent_poses: dict = field(default_factory=dict)  # the last /sim/agent_states: name -> (x, y, yaw)


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
            p, q = msg.pose.pose.position, msg.pose.pose.orientation
            track.append((p.x, p.y))
            got.base_frame = msg.child_frame_id
            if track is got.truth:
                got.pose = (p.x, p.y, quaternion_yaw((q.x, q.y, q.z, q.w)))
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
    _subscribe_outlines(node, args, got)
    return Subscriptions(got, counts, subs, names)


def _subscribe_outlines(node, args: argparse.Namespace, got: Collected) -> None:
    """robot_description, /sim/markers, /sim/agents and /sim/agent_states: where they are published."""
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from std_msgs.msg import String

    latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                         reliability=ReliabilityPolicy.RELIABLE)

    def on_description(msg) -> None:
        got.description = msg.data

    node.create_subscription(String, _full(args.namespace, topics.ROBOT_DESCRIPTION), on_description, latched)
    try:
        from visualization_msgs.msg import MarkerArray
    except ImportError:
        MarkerArray = None
    if MarkerArray is not None:
        def on_markers(msg) -> None:
            got.markers = [{"ns": m.ns, "id": m.id, "type": m.type, "text": m.text,
                            "position": (m.pose.position.x, m.pose.position.y, m.pose.position.z),
                            "orientation": (m.pose.orientation.x, m.pose.orientation.y,
                                            m.pose.orientation.z, m.pose.orientation.w),
                            "scale": (m.scale.x, m.scale.y, m.scale.z)} for m in msg.markers]
        node.create_subscription(MarkerArray, topics.SIM_MARKERS, on_markers, latched)
    try:
        from acres_interfaces.msg import Agents, AgentStates
    except ImportError:
        return

    def on_agents(msg) -> None:
        got.agents = {a.name: (a.length_m, a.width_m, a.rear_overhang_m)
                      for a in msg.agents if a.length_m > 0}

    def on_states(msg) -> None:
        got.agent_poses = {a.name: (a.pose.position.x, a.pose.position.y, a.heading_rad) for a in msg.agents}

    node.create_subscription(Agents, topics.SIM_AGENTS, on_agents, latched)
    node.create_subscription(AgentStates, topics.SIM_AGENT_STATES, on_states, QoSProfile(depth=10))


def outlines(got: Collected) -> list[Outline]:
    """The vehicles (every agent with sim_control, else this one from its description) and objects."""
    shown = [vehicle_outline(name, *got.agent_poses[name], *size)
             for name, size in got.agents.items() if name in got.agent_poses]
    if not shown and got.description and got.pose is not None:
        body = body_from_urdf(got.description)
        base_link = got.base_frame.replace("base_footprint", "base_link")
        origin = next((t[0, 3] for parent, child, t in got.tf_static if child == base_link), 0.0)
        if body is not None:
            length, width, behind_base_link = body
            shown.append(vehicle_outline(got.base_frame.split("/")[0] if "/" in got.base_frame else "",
                                         *got.pose, length, width, behind_base_link - origin))
    return shown + marker_outlines(got.markers)


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
        outlines=outlines(got),
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
    vehicles = sum(o.vehicle for o in data.outlines)
    print(f"snapshot: wrote {out.resolve()} ({vehicles} vehicle and {len(data.outlines) - vehicles} object "
          "outlines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
