"""sim_bridge as a real process on a real (isolated) ROS graph, fed by scripted TSS1 servers.

These tests do not need fake_game: the server in the test writes frames made with the protocol
codec, so every published message can be compared with the exact frame it came from.
ROS_DOMAIN_ID 140..149.
"""

from __future__ import annotations

import itertools
import json
import time
import math
import re
import signal

import numpy as np
import pytest
from support.bridge import (
    GATE,
    Graph,
    ScriptedServer,
    frame,
    free_port,
    ins_values,
    parse_frames,
    scripted_stream,
    small_hello_json,
    start_bridge,
)
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from nav_msgs.msg import Odometry
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import CameraInfo, Image, Imu, NavSatFix, NavSatStatus, PointCloud2
from std_msgs.msg import UInt64
from tf2_msgs.msg import TFMessage

from acres_sim.stream import protocol
from acres_sim.stream.hello import encode_hello, parse_hello
from acres_sim.convert.topic_plan import topic_plan
from acres_sim.convert.stamps import stamp_to_sec_nanosec
from acres_sim.stream.protocol import FrameType, Ins

TF_STATIC_QOS = QoSProfile(depth=10, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                           reliability=ReliabilityPolicy.RELIABLE)
CLOCK_QOS = QoSProfile(depth=1000, reliability=ReliabilityPolicy.BEST_EFFORT)


def _stamp(msg_header) -> tuple[int, int]:
    return msg_header.stamp.sec, msg_header.stamp.nanosec


def test_topic_plan_follows_the_hello():
    full = parse_hello(json.dumps(small_hello_json()).encode())
    assert set(topic_plan(full)) == {
        "lidar/points", "camera/image_raw", "camera/image_raw/compressed", "camera/camera_info", "ins/fix",
        "ins/imu", "ins/odom", "ins/odom_utm", "ground_truth/odom", "/tf"}
    doc = small_hello_json(camera=False)
    doc["georeferenced"] = False
    core = parse_hello(json.dumps(doc).encode())
    plan = topic_plan(core, ground_truth=False, tf=False)
    assert set(plan) == {"lidar/points", "ins/fix", "ins/imu", "ins/odom"}


def test_remote_host_is_refused_with_a_one_line_error():
    proc = start_bridge(free_port(), 140, ["host:=192.168.7.7"])
    rc = proc.proc.wait(20)
    proc.stop()
    assert rc != 0
    errors = [line for line in proc.lines if "not a loopback address" in line]
    assert len(errors) == 1, proc.output()
    assert "Traceback" not in proc.output()


# ---------------------------------------------------------------------------------------------
# Content of every topic, against the frames the server sent


SENSOR_TOPICS = {
    "lidar/points": PointCloud2, "camera/image_raw": Image, "camera/camera_info": CameraInfo,
    "ins/fix": NavSatFix, "ins/imu": Imu, "ins/odom": Odometry, "ins/odom_utm": Odometry,
    "ground_truth/odom": Odometry, "/tf": TFMessage, "sim/barrier": UInt64,
}


def _subscribe_all(graph: Graph) -> None:
    for topic, kind in SENSOR_TOPICS.items():
        graph.subscribe(kind, topic)
    graph.subscribe(TFMessage, "/tf_static", TF_STATIC_QOS)
    graph.subscribe(Clock, "/clock", CLOCK_QOS)
    graph.subscribe(DiagnosticArray, "/diagnostics")


def test_every_topic_carries_the_frame_content():
    hello_doc = small_hello_json()
    frames = scripted_stream(hello_doc, 1.0)
    sent = parse_frames(b"".join(frames))
    srv = ScriptedServer([[frames[0], GATE, *frames[1:]]], pace_s=1 / 800)
    graph = Graph(141)
    bridge = start_bridge(srv.port, 141, ["qos_depth:=50", "stats_period_s:=1.0"])
    try:
        _subscribe_all(graph)
        graph.wait_matched([t for t in SENSOR_TOPICS if t != "sim/barrier"] + ["/tf_static"], 30)
        srv.gate.set()
        by_type = {k: [(h, p) for h, p in sent if h.type == k] for k in FrameType}
        n_ins, n_lidar = len(by_type[FrameType.INS]), len(by_type[FrameType.LIDAR])
        graph.spin_until(lambda: len(graph.received["ins/odom"]) >= n_ins
                         and len(graph.received["lidar/points"]) >= n_lidar
                         and len(graph.received["camera/camera_info"]) >= n_lidar
                         and len(graph.received["/diagnostics"]) >= 2, 30, "all frames")
        hello = parse_hello(by_type[FrameType.HELLO][0][1])

        # LiDAR: organised cloud, point bytes unchanged
        clouds = graph.messages("lidar/points")
        assert len(clouds) == n_lidar
        for msg, (h, payload) in zip(clouds, by_type[FrameType.LIDAR]):
            assert _stamp(msg.header) == stamp_to_sec_nanosec(h.stamp)
            assert msg.header.frame_id == "lidar"
            assert (msg.height, msg.width) == (hello.lidar.columns, hello.lidar.rings)
            assert [(f.name, f.offset, f.datatype, f.count) for f in msg.fields] == [
                ("x", 0, 7, 1), ("y", 4, 7, 1), ("z", 8, 7, 1), ("intensity", 12, 7, 1)]
            assert msg.point_step == 16 and msg.row_step == 16 * hello.lidar.rings
            assert not msg.is_bigendian and not msg.is_dense  # the script puts one NaN in each cloud
            assert bytes(msg.data) == payload[16:]

        # Camera: pixel bytes unchanged, info from the Hello with the same stamp
        images, infos = graph.messages("camera/image_raw"), graph.messages("camera/camera_info")
        for img, info, (h, payload) in zip(images, infos, by_type[FrameType.CAMERA]):
            assert _stamp(img.header) == _stamp(info.header) == stamp_to_sec_nanosec(h.stamp)
            assert img.header.frame_id == info.header.frame_id == "camera_optical"
            assert (img.encoding, img.width, img.height, img.step) == ("bgr8", 8, 6, 24)
            assert bytes(img.data) == payload[16:]
            cam = hello.camera
            assert list(info.k) == [cam.fx, 0, cam.cx, 0, cam.fy, cam.cy, 0, 0, 1]
            assert list(info.d) == list(cam.d) and info.distortion_model == "plumb_bob"
            assert list(info.p) == [cam.fx, 0, cam.cx, 0, 0, cam.fy, cam.cy, 0, 0, 0, 1, 0]
            assert list(info.r) == [1, 0, 0, 0, 1, 0, 0, 0, 1]
        assert len(images) == len(infos) == n_lidar

        # INS: fix, imu, odometry (INS, UTM, truth) and /tf per epoch
        fixes, odoms = graph.messages("ins/fix"), graph.messages("ins/odom")
        utms, truths = graph.messages("ins/odom_utm"), graph.messages("ground_truth/odom")
        tfs, imus = graph.messages("/tf"), graph.messages("ins/imu")
        assert len(fixes) == len(odoms) == len(utms) == len(truths) == len(tfs) == len(imus) == n_ins
        for i, (h, payload) in enumerate(by_type[FrameType.INS]):
            v = np.frombuffer(payload, "<f8")
            stamp = stamp_to_sec_nanosec(h.stamp)
            fix, odom, utm, truth, tf = fixes[i], odoms[i], utms[i], truths[i], tfs[i].transforms[0]
            assert _stamp(fix.header) == _stamp(odom.header) == _stamp(tf.header) == stamp
            assert fix.header.frame_id == "ins" and imus[i].header.frame_id == "ins"
            assert (fix.latitude, fix.longitude, fix.altitude) == (v[Ins.Lat], v[Ins.Lon], v[Ins.Height])
            assert fix.status.status == NavSatStatus.STATUS_GBAS_FIX
            assert fix.status.service == NavSatStatus.SERVICE_GPS
            assert fix.position_covariance_type == NavSatFix.COVARIANCE_TYPE_DIAGONAL_KNOWN
            assert [fix.position_covariance[j] for j in (0, 4, 8)] == list(v[Ins.CovE:Ins.CovU + 1])
            assert (odom.header.frame_id, odom.child_frame_id) == ("map", "base_footprint")
            p = odom.pose.pose.position
            assert (p.x, p.y, p.z) == tuple(v[Ins.EnuX:Ins.EnuZ + 1])
            assert odom.pose.pose.orientation.w == v[Ins.EnuQw]
            assert odom.twist.twist.linear.x == v[Ins.VelX]
            assert (utm.header.frame_id, utm.child_frame_id) == ("utm", "base_footprint")
            assert utm.pose.pose.position.x == v[Ins.UtmE] and utm.pose.pose.position.y == v[Ins.UtmN]
            assert truth.pose.pose.position.x == v[Ins.TruthEnuX]
            assert truth.twist.twist.linear.x == v[Ins.TruthSpeed]
            assert (tf.header.frame_id, tf.child_frame_id) == ("map", "base_footprint")
            assert tf.transform.translation.x == v[Ins.EnuX]
            assert imus[i].linear_acceleration.z == v[Ins.AccelZ]

        # /clock: every clock frame's header stamp, rising (best effort: a few may be missing)
        clocks = [m.clock for m in graph.messages("/clock")]
        assert len(clocks) >= 0.8 * len(by_type[FrameType.CLOCK])
        times = [c.sec + c.nanosec * 1e-9 for c in clocks]
        assert all(b > a for a, b in itertools.pairwise(times))
        sent_clock = {stamp_to_sec_nanosec(h.stamp) for h, _ in by_type[FrameType.CLOCK]}
        assert {(c.sec, c.nanosec) for c in clocks} <= sent_clock

        # /tf_static: one message with every transform; a late subscriber still gets it
        statics = graph.messages("/tf_static")
        assert len(statics) == 1
        children = {t.child_frame_id for t in statics[0].transforms}
        assert children == {"base_link", "lidar", "camera", "camera_optical", "ins", "imu", "gnss"}
        late_msgs = graph.subscribe(TFMessage, "/tf_static", TF_STATIC_QOS)
        graph.spin_until(lambda: len(late_msgs) >= 1, 10, "late /tf_static")
        assert {t.child_frame_id for t in late_msgs[0][1].transforms} == children

        # /diagnostics: one status for this stream
        def lidar_count(msg) -> int:
            return int({kv.key: kv.value for kv in msg.status[0].values}["lidar frames"])

        graph.spin_until(lambda: lidar_count(graph.messages("/diagnostics")[-1]) == n_lidar, 10,
                         "diagnostics after the stream")
        status = graph.messages("/diagnostics")[-1].status[0]
        assert status.name == "/sim_bridge: sensor stream" and status.hardware_id == "tiny"
        values = {kv.key: kv.value for kv in status.values}
        assert values["connection"] == "connected" and values["agent"] == "tiny"
        assert values["vehicle"] == "polaris"
        for key in ("lidar frames", "lidar rate (Hz)", "lidar expected rate (Hz)", "lidar latency p50 (ms)",
                    "lidar latency p99 (ms)", "lidar bad frames", "MB/s", "reconnects", "sequence gaps",
                    "clock offset (s)"):
            assert key in values, key
        assert float(values["clock offset (s)"]) == pytest.approx(1.5)
        assert values["sequence gaps"] == "0"
    finally:
        assert bridge.stop(signal.SIGINT) == 0, bridge.output()
        graph.close()
        srv.close()
    assert re.search(r"stream tiny connected \| clock [\d.]+ Hz", bridge.output()), bridge.output()


def test_disabled_camera_and_no_georeference():
    doc = small_hello_json(agent="core", camera=False)
    doc["georeferenced"] = False
    hello = encode_hello(parse_hello(json.dumps(doc).encode()))
    body = [frame(FrameType.CLOCK, i, i / 120, protocol.encode_clock(i / 120)) for i in range(1, 20)]
    body += [frame(FrameType.INS, 20 + i, 0.2 + i / 100,
                   protocol.encode_ins(ins_values(i, georeferenced=False))) for i in range(5)]
    srv = ScriptedServer([[frame(FrameType.HELLO, 0, 0.0, hello), GATE, *body]], pace_s=0.002)
    graph = Graph(142)
    bridge = start_bridge(srv.port, 142)
    try:
        fixes = graph.subscribe(NavSatFix, "ins/fix")
        graph.wait_matched(["ins/fix"], 30)
        srv.gate.set()
        graph.spin_until(lambda: len(fixes) >= 5, 15, "fixes")
        topics = dict(graph.node.get_publisher_names_and_types_by_node("sim_bridge", "/"))
        assert "/lidar/points" in topics and "/ins/odom" in topics
        assert not [t for t in topics if t.startswith("/camera")], topics
        assert "/ins/odom_utm" not in topics
        fix = fixes[-1][1]
        assert fix.status.status == NavSatStatus.STATUS_NO_FIX
        assert fix.position_covariance_type == NavSatFix.COVARIANCE_TYPE_UNKNOWN
    finally:
        assert bridge.stop(signal.SIGTERM) == 0, bridge.output()
        graph.close()
        srv.close()


# ---------------------------------------------------------------------------------------------
# Hello changes, reconnects, bad input


def test_same_hello_keeps_publishers_and_a_new_hello_resends_static_tf():
    doc_a = small_hello_json()
    doc_b = small_hello_json()
    doc_b["lidar"]["rpy_deg"] = [0.0, 10.0, 0.0]
    hello_a, hello_b = (frame(FrameType.HELLO, 0, 0.0, encode_hello(
        parse_hello(json.dumps(doc).encode()))) for doc in (doc_a, doc_b))

    def ins(seq: int) -> bytes:
        return frame(FrameType.INS, seq, seq / 100, protocol.encode_ins(ins_values(seq / 100)))

    scripts = [[hello_a, GATE, ins(1), ins(2)], [hello_a, ins(3), ins(4)], [hello_b, ins(5), ins(6)]]
    srv = ScriptedServer(scripts, hold=False)
    graph = Graph(143)
    bridge = start_bridge(srv.port, 143, ["reconnect_min_s:=0.2"])
    try:
        statics = graph.subscribe(TFMessage, "/tf_static", TF_STATIC_QOS)
        odoms = graph.subscribe(Odometry, "ins/odom")
        graph.wait_matched(["/tf_static", "ins/odom"], 30)
        srv.gate.set()
        graph.spin_until(lambda: srv.connections >= 4 and len(odoms) >= 6, 20, "three connections")
        graph.spin_for(0.5)
        assert len(statics) == 2, [len(m.transforms) for _, m in statics]  # A, then B; not A again
        lidar_b = next(t for t in statics[1][1].transforms if t.child_frame_id == "lidar")
        pitch = 2 * math.degrees(math.asin(lidar_b.transform.rotation.y))
        assert pitch == pytest.approx(10.0, abs=1e-6)
        # the publishers lived through the reconnects: one subscription got all six epochs
        assert sorted({round(m.pose.pose.position.x * 100) for _, m in odoms}) == [1, 2, 3, 4, 5, 6]
    finally:
        assert bridge.stop() == 0
        graph.close()
        srv.close()
    assert "same Hello" in bridge.output() and "new Hello" in bridge.output()


def test_bad_input_is_logged_and_later_frames_are_published():
    hello = frame(FrameType.HELLO, 0, 0.0, encode_hello(
        parse_hello(json.dumps(small_hello_json()).encode())))

    def ins(seq: int) -> bytes:
        return frame(FrameType.INS, seq, seq / 100, protocol.encode_ins(ins_values(seq / 100)))

    cam = frame(FrameType.CAMERA, 9, 0.0, protocol.encode_camera(np.zeros((6, 8, 3), np.uint8)))
    scripts = [
        [hello, GATE, ins(1), b"BAD!" + bytes(28)],  # bad magic -> reconnect
        [hello, protocol.pack_header(77, 2, 5000, 0.0, 0.0) + bytes(5000), ins(3),  # unknown type: skipped
         frame(FrameType.INS, 4, 0.04, bytes(12)),  # bad payload: counted, skipped
         protocol.pack_header(FrameType.LIDAR, 5, 200 << 20, 0.0, 0.0)],  # oversized -> reconnect
        [hello, ins(6), cam[:-7]],  # truncated, then the game closes -> reconnect
        [hello, ins(7), ins(8)],
    ]
    srv = ScriptedServer(scripts, hold=False)
    graph = Graph(144)
    bridge = start_bridge(srv.port, 144, ["reconnect_min_s:=0.05"])
    try:
        odoms = graph.subscribe(Odometry, "ins/odom")
        diags = graph.subscribe(DiagnosticArray, "/diagnostics")
        graph.wait_matched(["ins/odom"], 30)
        srv.gate.set()
        graph.spin_until(lambda: {7, 8} <= {round(m.pose.pose.position.x * 100) for _, m in odoms}, 20,
                         "frames after the bad input")
        got = sorted({round(m.pose.pose.position.x * 100) for _, m in odoms})
        assert {1, 3, 6, 7, 8} <= set(got) and 4 not in got
        graph.spin_until(lambda: any(int({kv.key: kv.value for kv in m.status[0].values}["reconnects"]) >= 3
                                     for _, m in diags), 10, "diagnostics with the reconnects")
        status = diags[-1][1].status[0]
        values = {kv.key: kv.value for kv in status.values}
        assert int(values["bad frames"]) >= 4
        assert bridge.proc.poll() is None
    finally:
        assert bridge.stop() == 0
        graph.close()
        srv.close()
    out = bridge.output()
    for text in ("bad magic", "unknown frame type 77", "above max_payload_bytes", "bad ins payload",
                 "middle of a frame"):
        assert text in out, f"{text!r} not logged:\n{out}"
    assert "Traceback" not in out


def test_diagnostics_report_error_while_the_game_is_away():
    graph = Graph(145)
    bridge = start_bridge(free_port(), 145)
    try:
        diags = graph.subscribe(DiagnosticArray, "/diagnostics")
        graph.spin_until(lambda: len(diags) >= 2, 20, "diagnostics")
        status = diags[-1][1].status[0]
        assert status.level == DiagnosticStatus.ERROR
        assert {kv.key: kv.value for kv in status.values}["connection"] in ("connecting", "disconnected")
    finally:
        assert bridge.stop() == 0
        graph.close()
    assert bridge.output().count("not reachable") == 1, bridge.output()


# ---------------------------------------------------------------------------------------------
# Barrier ordering and shutdown


def test_barrier_comes_after_every_message_of_its_step():
    frames = scripted_stream(small_hello_json(), 1.0, with_barriers=True)
    sent = parse_frames(b"".join(frames))
    srv = ScriptedServer([[frames[0], GATE, *frames[1:]]], pace_s=1 / 2000)
    graph = Graph(146)
    bridge = start_bridge(srv.port, 146)
    topics = {"ins/odom": Odometry, "lidar/points": PointCloud2, "camera/image_raw": Image}
    held: dict[str, set] = {t: set() for t in topics}
    problems: list[str] = []
    # the frames before each barrier, from the script
    expected: dict[int, dict[str, set]] = {}
    seen: dict[str, set] = {t: set() for t in topics}
    kind_topic = {FrameType.INS: "ins/odom", FrameType.LIDAR: "lidar/points",
                  FrameType.CAMERA: "camera/image_raw"}
    for h, payload in sent:
        if h.type in kind_topic:
            seen[kind_topic[h.type]].add(stamp_to_sec_nanosec(h.stamp))
        elif h.type == FrameType.BARRIER:
            expected[protocol.decode_barrier(payload)] = {t: set(s) for t, s in seen.items()}
    try:
        subs = {t: graph.subscribe(k, t, callback=lambda m, t=t: held[t].add(_stamp(m.header)))
                for t, k in topics.items()}
        del subs

        def on_barrier(msg) -> None:
            # Everything acknowledged before the barrier is in our readers' caches: take it now.
            for topic in topics:
                sub = graph.subscriptions[topic]
                while (taken := sub.handle.take_message(sub.msg_type, sub.raw)) is not None:
                    held[topic].add(_stamp(taken[0].header))
            for topic, stamps in expected[msg.data].items():
                missing = stamps - held[topic]
                if missing:
                    problems.append(f"barrier {msg.data}: {len(missing)} {topic} messages not yet received")

        barriers = graph.subscribe(UInt64, "sim/barrier", callback=on_barrier)
        graph.wait_matched(list(topics) + ["sim/barrier"], 30)
        srv.gate.set()
        graph.spin_until(lambda: len(barriers) >= len(expected), 30, "every barrier")
        assert [m.data for _, m in barriers] == sorted(expected)
        assert not problems, problems
    finally:
        assert bridge.stop() == 0
        graph.close()
        srv.close()


def test_xyzirt_clouds_through_the_bridge():
    hello = frame(FrameType.HELLO, 0, 0.0, json.dumps(small_hello_json()).encode())
    pts = np.ones((16, 4, 4), np.float32)
    srv = ScriptedServer([[hello, GATE, frame(FrameType.LIDAR, 1, 2.5, protocol.encode_lidar(pts))]])
    graph = Graph(148)
    bridge = start_bridge(srv.port, 148, ["lidar_fields:=xyzirt", "lidar_stamp:=start"])
    try:
        clouds = graph.subscribe(PointCloud2, "lidar/points")
        graph.wait_matched(["lidar/points"], 30)
        srv.gate.set()
        graph.spin_until(lambda: clouds, 20, "the cloud")
    finally:
        assert bridge.stop() == 0
        graph.close()
        srv.close()
    msg = clouds[0][1]
    assert [(f.name, f.offset, f.datatype) for f in msg.fields] == [
        ("x", 0, 7), ("y", 4, 7), ("z", 8, 7), ("intensity", 12, 7), ("ring", 16, 4), ("time", 20, 7)]
    assert (msg.height, msg.width, msg.point_step, msg.row_step) == (16, 4, 24, 96)
    assert _stamp(msg.header) == stamp_to_sec_nanosec(2.5 - 0.1)  # lidar.hz 10: the start of the sweep


def test_hellos_that_change_the_publishers_while_subscribers_come_and_go():
    """Publishers are created and destroyed on the reader thread (a Hello that enables or disables
    the camera) while the executor thread spins the same node and subscriptions to those topics
    appear and vanish. 30 connections alternate the two Hellos; the bridge must live through them
    without a crash or a traceback, and the last Hello's data must then arrive on every topic."""
    with_camera, without_camera = small_hello_json(), small_hello_json(camera=False)
    hellos = [frame(FrameType.HELLO, 0, 0.0, encode_hello(parse_hello(
        json.dumps(doc).encode()))) for doc in (with_camera, without_camera)]
    camera = with_camera["camera"]
    image = protocol.encode_camera(np.zeros((camera["height"], camera["width"], 3), np.uint8))

    def session(k: int) -> list:
        epoch = frame(FrameType.INS, 1, k + 0.01, protocol.encode_ins(ins_values(k + 0.01)))
        if k % 2:
            return [hellos[1], epoch]
        return [hellos[0], epoch, frame(FrameType.CAMERA, 2, k + 0.01, image)]

    connections = 30
    final = [hellos[0], GATE] + [frame(FrameType.CAMERA, 3 + i, 100.0 + i / 10, image) for i in range(5)]
    srv = ScriptedServer([session(k) for k in range(connections)] + [final], hold=False)
    graph = Graph(149)
    bridge = start_bridge(srv.port, 149, ["reconnect_min_s:=0.1", "reconnect_max_s:=0.1"])
    try:
        deadline = time.monotonic() + 90
        churn = 0
        while srv.connections <= connections and time.monotonic() < deadline:
            sub = graph.node.create_subscription(Image, "camera/image_raw", lambda _m: None, 5)
            graph.spin_for(0.05)
            graph.node.destroy_subscription(sub)
            churn += 1
        assert srv.connections > connections, f"{srv.connections} connections in 90 s"
        images = graph.subscribe(Image, "camera/image_raw")
        graph.wait_matched(["camera/image_raw"], 30)
        srv.gate.set()
        graph.spin_until(lambda: len(images) >= 1, 20, "an image after the churn")
        alive = bridge.proc.poll() is None
    finally:
        code = bridge.stop()
        graph.close()
        srv.close()
    out = bridge.output()
    assert alive and code == 0, out[-3000:]
    assert "Traceback" not in out and "rror" not in out.replace("bad frames", ""), out[-3000:]
    assert churn > 10 and out.count("new Hello") >= connections // 2
