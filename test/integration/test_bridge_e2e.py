"""sim_bridge against fake_game, end to end: real sockets, real processes, a real ROS graph.

A recording TCP proxy sits between fake_game and the bridge: it forwards the bytes unchanged and
keeps them, so every published cloud and image is compared byte for byte with the frame it came
from (matched by stamp). ROS_DOMAIN_ID 150..159.
"""

from __future__ import annotations

import itertools
import json
import socket
import statistics

import numpy as np
import pytest
from support.reference_geometry import quat_matrix
from support.bridge import (
    Graph,
    RecordingProxy,
    free_port,
    free_ports,
    start_bridge,
    start_fake_game,
)
from diagnostic_msgs.msg import DiagnosticArray
from nav_msgs.msg import Odometry
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import CameraInfo, Image, NavSatFix, NavSatStatus, PointCloud2
from std_msgs.msg import UInt64
from tf2_msgs.msg import TFMessage

from acres_sim.stream import protocol
from acres_sim.stream.hello import parse_hello
from acres_sim.convert.stamps import stamp_to_sec_nanosec
from acres_sim.stream.protocol import FrameType, Ins

TF_STATIC_QOS = QoSProfile(depth=10, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                           reliability=ReliabilityPolicy.RELIABLE)
CLOCK_QOS = QoSProfile(depth=1000, reliability=ReliabilityPolicy.BEST_EFFORT)


def _stamp(header) -> tuple[int, int]:
    return header.stamp.sec, header.stamp.nanosec


class Session:
    """fake_game + one recording proxy and one sim_bridge per agent + the test's graph."""

    def __init__(self, domain_id: int, vehicles: list[str], game_args: list[str] = (),
                 bridge_params: list[str] = ()):
        self.ports = free_ports(len(vehicles))
        self.vehicles = vehicles
        self.game = start_fake_game(["--ports", ",".join(map(str, self.ports)), "--vehicles",
                                     ",".join(vehicles), "--stats-period-s", "5", *game_args], domain_id)
        self.proxies: list[RecordingProxy] = []
        self.bridges = []
        self.graph = None
        try:
            for vehicle in vehicles:
                self.game.wait_for(f"ACRES_SENSOR_STREAM_LISTENING agent={vehicle}", 60)
            self.graph = Graph(domain_id)
            several = len(vehicles) > 1
            for index, (vehicle, port) in enumerate(zip(vehicles, self.ports)):
                proxy = RecordingProxy(port)
                self.proxies.append(proxy)
                params = [f"frame_prefix:={vehicle}/" if several else "frame_prefix:=''",
                          f"publish_clock:={'true' if index == 0 else 'false'}", *bridge_params]
                self.bridges.append(start_bridge(proxy.port, domain_id, params, namespace=f"/{vehicle}"))
        except BaseException:
            self.close()
            raise

    def frames(self, index: int = 0) -> list[tuple[protocol.FrameHeader, bytes]]:
        return self.proxies[index].frames(0)

    def close(self) -> list[int | None]:
        codes = [b.stop() for b in self.bridges]
        if self.graph is not None:
            self.graph.close()
        for p in self.proxies:
            p.close()
        self.game.stop()
        return codes


def _check_vehicle_topics(s: Session, index: int, vehicle: str, prefix: str) -> None:
    """Every received message equals the frame with its stamp in the recording of this agent."""
    ns = f"/{vehicle}/"
    sent = s.frames(index)
    by_stamp: dict[int, dict] = {k: {} for k in FrameType}
    for h, payload in sent:
        by_stamp[h.type][stamp_to_sec_nanosec(h.stamp)] = payload
    hello = parse_hello(next(p for h, p in sent if h.type == FrameType.HELLO))
    assert hello.vehicle == vehicle

    clouds = s.graph.messages(ns + "lidar/points")
    assert len(clouds) >= 5
    for msg in clouds:
        payload = by_stamp[FrameType.LIDAR][_stamp(msg.header)]
        assert msg.header.frame_id == prefix + hello.lidar.frame_id
        assert (msg.height, msg.width, msg.point_step) == (hello.lidar.columns, hello.lidar.rings, 16)
        assert bytes(msg.data) == payload[16:]
        points = np.frombuffer(payload[16:], "<f4").reshape(-1, 4)
        assert msg.is_dense == bool(np.isfinite(points[:, :3]).all())

    if hello.camera.enabled:
        images, infos = s.graph.messages(ns + "camera/image_raw"), s.graph.messages(ns + "camera/camera_info")
        assert len(images) >= 5 and len(infos) >= 5
        for img in images:
            payload = by_stamp[FrameType.CAMERA][_stamp(img.header)]
            assert img.header.frame_id == prefix + "camera_optical" and img.encoding == "bgr8"
            cam = hello.camera
            assert (img.width, img.height, img.step) == (cam.width, cam.height, 3 * cam.width)
            assert bytes(img.data) == payload[16:]
        cam = hello.camera
        assert {_stamp(i.header) for i in infos} <= set(by_stamp[FrameType.CAMERA])
        info = infos[0]
        assert list(info.k) == [cam.fx, 0, cam.cx, 0, cam.fy, cam.cy, 0, 0, 1]
        assert list(info.d) == list(cam.d)
        assert list(info.p) == [cam.fx, 0, cam.cx, 0, 0, cam.fy, cam.cy, 0, 0, 0, 1, 0]
    else:
        topics = dict(s.graph.node.get_publisher_names_and_types_by_node("sim_bridge", f"/{vehicle}"))
        assert not [t for t in topics if "camera" in t], topics

    fixes, odoms = s.graph.messages(ns + "ins/fix"), s.graph.messages(ns + "ins/odom")
    truths = s.graph.messages(ns + "ground_truth/odom")
    assert len(fixes) >= 50 and len(odoms) >= 50
    fix_by_stamp = {_stamp(f.header): f for f in fixes}
    truth_by_stamp = {_stamp(t.header): t for t in truths}
    common = [o for o in odoms if _stamp(o.header) in fix_by_stamp and _stamp(o.header) in truth_by_stamp]
    assert len(common) >= 50
    for odom in common:
        fix, truth = fix_by_stamp[_stamp(odom.header)], truth_by_stamp[_stamp(odom.header)]
        v = np.frombuffer(by_stamp[FrameType.INS][_stamp(fix.header)], "<f8")
        assert fix.header.frame_id == prefix + "ins"
        assert (fix.latitude, fix.longitude, fix.altitude) == (v[Ins.Lat], v[Ins.Lon], v[Ins.Height])
        assert fix.status.status == NavSatStatus.STATUS_GBAS_FIX == int(v[Ins.FixStatus])
        assert fix.position_covariance_type == NavSatFix.COVARIANCE_TYPE_DIAGONAL_KNOWN
        assert [fix.position_covariance[j] for j in (0, 4, 8)] == list(v[Ins.CovE:Ins.CovU + 1])
        assert (odom.header.frame_id, odom.child_frame_id) == ("map", prefix + "base_footprint")
        pose = odom.pose.pose
        assert (pose.position.x, pose.position.y, pose.position.z) == tuple(v[Ins.EnuX:Ins.EnuZ + 1])
        q = pose.orientation
        assert (q.x, q.y, q.z, q.w) == tuple(v[Ins.EnuQx:Ins.EnuQw + 1])
        assert truth.pose.pose.position.x == v[Ins.TruthEnuX]

    statics = [m for _, m in s.graph.received["/tf_static"]]
    children = {t.child_frame_id for m in statics for t in m.transforms}
    expected = {prefix + f for f in ("base_link", hello.lidar.frame_id, "ins", "imu", "gnss")}
    if hello.camera.enabled:
        expected |= {prefix + "camera", prefix + "camera_optical"}
    assert expected <= children


def _enough_of_everything(graph: Graph, vehicle: str, clouds: int) -> bool:
    """Clouds, and the 100 Hz INS topics of that stretch too (their subscriptions match on their own)."""
    ns = f"/{vehicle}/"
    return (len(graph.received[ns + "lidar/points"]) >= clouds
            and all(len(graph.received[ns + t]) >= 60 for t in ("ins/fix", "ins/odom", "ground_truth/odom")))


def _subscribe_vehicle(graph: Graph, vehicle: str) -> None:
    ns = f"/{vehicle}/"
    for topic, kind in (("lidar/points", PointCloud2), ("camera/image_raw", Image),
                        ("camera/camera_info", CameraInfo), ("ins/fix", NavSatFix), ("ins/odom", Odometry),
                        ("ground_truth/odom", Odometry)):
        graph.subscribe(kind, ns + topic)


def test_polaris_every_topic_matches_the_stream():
    s = Session(150, ["polaris"], ["--cached"])
    try:
        _subscribe_vehicle(s.graph, "polaris")
        s.graph.subscribe(TFMessage, "/tf_static", TF_STATIC_QOS)
        clocks = s.graph.subscribe(Clock, "/clock", CLOCK_QOS)
        s.graph.subscribe(DiagnosticArray, "/diagnostics")
        s.graph.wait_matched(["/polaris/lidar/points", "/polaris/camera/image_raw", "/clock"], 60)
        s.graph.spin_until(lambda: _enough_of_everything(s.graph, "polaris", 20), 30, "20 clouds and INS")
        _check_vehicle_topics(s, 0, "polaris", "")
        # /clock: world time rising at 120 Hz of simulation time
        times = [m.clock.sec + m.clock.nanosec * 1e-9 for _, m in clocks]
        assert all(b > a for a, b in itertools.pairwise(times))
        steps = np.diff(times)
        assert statistics.median(steps) == pytest.approx(1 / 120, abs=1e-6)
        # every received stamp is a Clock frame's header stamp; /clock is best effort, so a busy
        # subscriber may miss some, but most of the frames in the received span arrive
        sent = sorted(h.stamp for h, _ in s.frames(0) if h.type == FrameType.CLOCK)
        stamps = {(m.clock.sec, m.clock.nanosec) for _, m in clocks}
        assert stamps <= {stamp_to_sec_nanosec(t) for t in sent}
        in_span = [t for t in sent if times[0] - 1e-9 <= t <= times[-1] + 1e-9]
        assert len(clocks) >= 0.5 * len(in_span), (len(clocks), len(in_span))
        # a late /tf_static subscriber still gets every transform (transient local)
        late = s.graph.subscribe(TFMessage, "/tf_static", TF_STATIC_QOS)
        s.graph.spin_until(lambda: len(late) >= 1, 10, "late /tf_static")
        assert len(late[0][1].transforms) == 7
        diag = s.graph.messages("/diagnostics")[-1].status[0]
        assert diag.name == "/polaris/sim_bridge: sensor stream" and diag.hardware_id == "polaris"
    finally:
        codes = s.close()
    assert codes == [0]


def test_maxxum_has_no_camera_topics():
    s = Session(151, ["maxxum"], ["--cached"])
    try:
        _subscribe_vehicle(s.graph, "maxxum")
        s.graph.subscribe(TFMessage, "/tf_static", TF_STATIC_QOS)
        s.graph.wait_matched(["/maxxum/lidar/points", "/maxxum/ins/odom"], 60)
        s.graph.spin_until(lambda: _enough_of_everything(s.graph, "maxxum", 10), 30, "10 clouds and INS")
        _check_vehicle_topics(s, 0, "maxxum", "")
        assert s.graph.subscriptions["/maxxum/camera/image_raw"].get_publisher_count() == 0
    finally:
        assert s.close() == [0]


def test_two_agents_with_prefixes_and_one_clock():
    s = Session(152, ["polaris", "maxxum"], ["--cached"])
    try:
        for vehicle in s.vehicles:
            _subscribe_vehicle(s.graph, vehicle)
        s.graph.subscribe(TFMessage, "/tf_static", TF_STATIC_QOS)
        clocks = s.graph.subscribe(Clock, "/clock", CLOCK_QOS)
        s.graph.wait_matched(["/polaris/lidar/points", "/maxxum/lidar/points", "/clock"], 60)
        s.graph.spin_until(lambda: all(_enough_of_everything(s.graph, v, 10) for v in s.vehicles),
                           30, "clouds and INS messages of both agents")
        _check_vehicle_topics(s, 0, "polaris", "polaris/")
        _check_vehicle_topics(s, 1, "maxxum", "maxxum/")
        assert s.graph.subscriptions["/clock"].get_publisher_count() == 1
        times = [m.clock.sec + m.clock.nanosec * 1e-9 for _, m in clocks]
        assert all(b > a for a, b in itertools.pairwise(times))
    finally:
        assert s.close() == [0, 0]


def test_no_georeference_gives_no_fix_and_no_utm_odometry():
    s = Session(153, ["polaris"], ["--cached", "--no-georeference"])
    try:
        fixes = s.graph.subscribe(NavSatFix, "/polaris/ins/fix")
        utm = s.graph.subscribe(Odometry, "/polaris/ins/odom_utm")
        s.graph.wait_matched(["/polaris/ins/fix"], 60)
        s.graph.spin_until(lambda: len(fixes) >= 20, 20, "fixes")
        fix = fixes[-1][1]
        assert fix.status.status == NavSatStatus.STATUS_NO_FIX
        assert fix.position_covariance_type == NavSatFix.COVARIANCE_TYPE_UNKNOWN
        assert s.graph.subscriptions["/polaris/ins/odom_utm"].get_publisher_count() == 0 and not utm
    finally:
        assert s.close() == [0]


def test_lockstep_barrier_arrives_after_all_messages_of_its_step():
    control = free_port()
    s = Session(154, ["polaris"], ["--cached", "--lockstep", "--control-port", str(control)])
    topics = {"/polaris/ins/odom": Odometry, "/polaris/lidar/points": PointCloud2,
              "/polaris/camera/image_raw": Image}
    held: dict[str, set] = {t: set() for t in topics}
    barrier_holdings: list[tuple[int, dict[str, set]]] = []
    try:
        s.game.wait_for(f"ACRES_SIM_CONTROL_LISTENING port={control}", 30)
        for topic, kind in topics.items():
            s.graph.subscribe(kind, topic, callback=lambda m, t=topic: held[t].add(_stamp(m.header)))

        def on_barrier(msg) -> None:
            # data acknowledged before the barrier is already in our readers' caches: take it all
            for topic in topics:
                sub = s.graph.subscriptions[topic]
                while (taken := sub.handle.take_message(sub.msg_type, sub.raw)) is not None:
                    held[topic].add(_stamp(taken[0].header))
            barrier_holdings.append((msg.data, {t: set(v) for t, v in held.items()}))

        barriers = s.graph.subscribe(UInt64, "/polaris/sim/barrier", callback=on_barrier)
        s.graph.wait_matched(["/polaris/sim/barrier"], 60)
        s.graph.spin_until(lambda: all(sub.get_publisher_count() for sub in s.graph.subscriptions.values()),
                           30, "data publishers (created at the Hello)")
        s.graph.spin_for(1.0)
        with socket.create_connection(("127.0.0.1", control), timeout=30) as ctl:
            reader = ctl.makefile("r")
            for _ in range(4):
                ctl.sendall(b'{"op": "step", "steps": 12}\n')
                answer = json.loads(reader.readline())
                assert answer["ok"], answer
                before = len(barriers)
                s.graph.spin_until(lambda: len(barriers) > before, 20, "barrier")  # noqa: B023
        # what preceded each barrier on the wire
        seen: dict[str, set] = {t: set() for t in topics}
        expected: dict[int, dict[str, set]] = {}
        kind_topic = {FrameType.INS: "/polaris/ins/odom", FrameType.LIDAR: "/polaris/lidar/points",
                      FrameType.CAMERA: "/polaris/camera/image_raw"}
        for h, payload in s.frames(0):
            if h.type in kind_topic:
                seen[kind_topic[h.type]].add(stamp_to_sec_nanosec(h.stamp))
            elif h.type == FrameType.BARRIER:
                expected[protocol.decode_barrier(payload)] = {t: set(v) for t, v in seen.items()}
        assert [step for step, _ in barrier_holdings] == sorted(expected) == [12, 24, 36, 48]
        for step, holding in barrier_holdings:
            for topic, stamps in expected[step].items():
                assert stamps, f"no {topic} data before barrier {step}"
                missing = len(stamps - holding[topic])
                assert not missing, f"barrier {step}: {missing} {topic} messages not yet received"
    finally:
        assert s.close() == [0]


def test_lidar_ground_points_land_on_the_terrain():
    """Cloud points through /tf_static (base_footprint -> lidar) and ground_truth/odom (map ->
    base_footprint, interpolated to each point's firing time from the xyzirt `time` field, since a
    sweep takes 0.1 s on bumpy ground) land on the fake world's rolling ground, z = terrain height
    at (x, y), within 5 cm (fake_game --no-noise); the ground they land on is not flat."""
    from acres_sim.fake_game.world.scene import DEFAULT_TERRAIN

    s = Session(155, ["polaris"], ["--no-noise", "--realtime-factor", "0.5"],
                ["tf_source:=ground_truth", "lidar_fields:=xyzirt"])
    try:
        clouds = s.graph.subscribe(PointCloud2, "/polaris/lidar/points")
        truths = s.graph.subscribe(Odometry, "/polaris/ground_truth/odom")
        statics = s.graph.subscribe(TFMessage, "/tf_static", TF_STATIC_QOS)
        s.graph.wait_matched(["/polaris/lidar/points", "/polaris/ground_truth/odom"], 60)
        layout = np.dtype({"names": ["xyz", "time"], "formats": [("<f4", (3,)), "<f4"], "offsets": [0, 20],
                           "itemsize": 24})

        def stamp_s(msg) -> float:
            return msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9

        def cells_of(cloud) -> np.ndarray:
            return np.frombuffer(bytes(cloud.data), layout).reshape(cloud.height, cloud.width)

        def firing_times(cloud) -> np.ndarray:  # per column
            return stamp_s(cloud) + cells_of(cloud)["time"][:, 0].astype(np.float64)

        def swept_within_truth() -> list:
            # the two topics match at different moments, so the first clouds may have been swept
            # before the first ground truth received: only clouds the truth covers are checked
            if len(truths) < 2:
                return []
            received = [stamp_s(m) for _, m in truths]
            return [c for _, c in clouds
                    if min(received) <= firing_times(c).min() and firing_times(c).max() <= max(received)]

        s.graph.spin_until(lambda: len(swept_within_truth()) >= 2 and statics, 60,
                           "two clouds swept within the ground truth received")
        lidar_tf = next(t.transform for t in statics[0][1].transforms if t.child_frame_id == "lidar")
        rot = lidar_tf.rotation
        r_bl = quat_matrix((rot.x, rot.y, rot.z, rot.w))
        t_bl = np.array([lidar_tf.translation.x, lidar_tf.translation.y, lidar_tf.translation.z])
        checked = swept_within_truth()[:2]
        odoms = sorted((stamp_s(m), m) for _, m in truths)
        times = np.array([t for t, _ in odoms])
        positions = np.array([[m.pose.pose.position.x, m.pose.pose.position.y, m.pose.pose.position.z]
                              for _, m in odoms])
        quats = np.array([[m.pose.pose.orientation.x, m.pose.pose.orientation.y, m.pose.pose.orientation.z,
                           m.pose.pose.orientation.w] for _, m in odoms])
        for cloud in checked:
            cells = cells_of(cloud)
            column_times = firing_times(cloud)
            assert times[0] <= column_times.min() and column_times.max() <= times[-1]
            # the truth at each column's firing time: linear in position, normalised linear in
            # rotation between the two 100 Hz epochs around it (close enough over 10 ms)
            k = np.clip(np.searchsorted(times, column_times) - 1, 0, len(times) - 2)
            w = ((column_times - times[k]) / (times[k + 1] - times[k]))[:, None]
            p_wb = positions[k] * (1 - w) + positions[k + 1] * w
            q = quats[k] * (1 - w) + quats[k + 1] * w * np.sign((quats[k] * quats[k + 1]).sum(1))[:, None]
            r_wb = np.array([quat_matrix(qi) for qi in q])  # (columns, 3, 3)
            pts = cells["xyz"].astype(np.float64)  # (columns, rings, 3), NaN without a return
            in_base = pts @ r_bl.T + t_bl
            world = np.einsum("cij,crj->cri", r_wb, in_base) + p_wb[:, None, :]
            near_ground_rings = world[:, :6].reshape(-1, 3)  # the six lowest beams (-55..-22 deg)
            near_ground_rings = near_ground_rings[np.isfinite(near_ground_rings).all(axis=1)]
            all_pts = world.reshape(-1, 3)
            all_pts = all_pts[np.isfinite(all_pts).all(axis=1)]
            for p, what in ((near_ground_rings, "low rings"), (all_pts, "all")):
                z = p[:, 2] - DEFAULT_TERRAIN.height(p[:, 0], p[:, 1])  # above the ground
                on_ground = np.abs(z) <= 0.05
                below = z < -0.05
                if what == "low rings":
                    share = on_ground.mean()
                    assert share >= 0.9, f"{what}: only {share:.1%} within 5 cm of the terrain"
                    assert np.ptp(p[on_ground, 2]) > 0.05, "the ground under the rings is not flat"
                else:
                    assert on_ground.mean() >= 0.3, f"{what}: only {on_ground.mean():.1%} on the ground"
                    assert below.mean() <= 0.005, f"{what}: {below.mean():.2%} of points below the ground"
    finally:
        assert s.close() == [0]
