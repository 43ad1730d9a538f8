"""camera/image_raw/compressed: JPEG only while someone subscribes, same stamp and frame as the raw
image, and within JPEG error of it. The real bridge on a real graph, fed by a scripted peer.
ROS_DOMAIN_ID 189."""

from __future__ import annotations

import json
import os
import threading
import time

import numpy as np
import simplejpeg
from support.bridge import GATE, Graph, ScriptedServer, frame, ros_env, small_hello_json, start_bridge
from diagnostic_msgs.msg import DiagnosticArray
from sensor_msgs.msg import CompressedImage, Image

from acres_sim.stream import protocol
from acres_sim.stream.protocol import FrameType

WIDTH, HEIGHT = 64, 48


def smooth_image(k: int) -> np.ndarray:
    """A gradient with a moving bright square: JPEG keeps it to within a few grey levels."""
    y, x = np.mgrid[0:HEIGHT, 0:WIDTH]
    img = np.stack([x * 3, y * 4, (x + y) * 2], axis=-1).astype(np.uint8)
    img[10:20, 5 + k:15 + k] = 230
    return img


def image_frame(k: int) -> bytes:
    return frame(FrameType.CAMERA, k, k / 10.0, protocol.encode_camera(smooth_image(k)))


def test_jpeg_only_while_subscribed_and_close_to_the_raw_image():
    doc = small_hello_json()
    doc["camera"].update(width=WIDTH, height=HEIGHT)
    second_phase = threading.Event()
    script = [frame(FrameType.HELLO, 0, 0.0, json.dumps(doc).encode()), GATE,
              *[image_frame(k) for k in range(1, 6)],
              lambda _conn: second_phase.wait(60)]
    for k in range(6, 11):  # at camera rate: the encoder keeps only the newest image
        script += [lambda _conn: time.sleep(0.1), image_frame(k)]
    server = ScriptedServer([script], hold=True)
    graph = Graph(189)
    bridge = start_bridge(server.port, 189, ["jpeg_quality:=95"])
    try:
        raw = graph.subscribe(Image, "camera/image_raw")
        diags = graph.subscribe(DiagnosticArray, "/diagnostics")
        graph.wait_matched(["camera/image_raw"], 30)
        server.gate.set()
        graph.spin_until(lambda: len(raw) >= 5, 20, "the first five images")
        graph.spin_until(lambda: len(diags) >= 2, 10, "diagnostics")
        values = {kv.key: kv.value for kv in diags[-1][1].status[0].values}
        assert values["compressed images encoded"] == "0", "JPEG encoded while nobody subscribed"

        compressed = graph.subscribe(CompressedImage, "camera/image_raw/compressed")
        graph.wait_matched(["camera/image_raw/compressed"], 30)
        second_phase.set()
        graph.spin_until(lambda: len(compressed) >= 5, 20, "five compressed images")
        graph.spin_until(lambda: len(raw) >= 10, 20, "all raw images")
    finally:
        assert bridge.stop() == 0
        graph.close()
        server.close()
    raw_by_stamp = {(m.header.stamp.sec, m.header.stamp.nanosec): m for _, m in raw}
    for _, msg in compressed:
        assert msg.format == "bgr8; jpeg compressed bgr8"
        stamp = (msg.header.stamp.sec, msg.header.stamp.nanosec)
        twin = raw_by_stamp[stamp]  # the same stamp as one raw image
        assert msg.header.frame_id == twin.header.frame_id == "camera_optical"
        decoded = simplejpeg.decode_jpeg(bytes(msg.data), colorspace="BGR")
        original = np.frombuffer(bytes(twin.data), np.uint8).reshape(HEIGHT, WIDTH, 3)
        error = np.abs(decoded.astype(int) - original.astype(int))
        assert error.mean() < 3.0 and np.percentile(error, 99) < 24, (error.mean(), error.max())


def test_without_the_jpeg_encoder_the_compressed_topic_is_not_advertised(tmp_path):
    """A machine without simplejpeg: one WARN at start naming the package, no compressed topic, and
    the raw images go on (no error per image)."""
    (tmp_path / "simplejpeg.py").write_text("raise ImportError('simplejpeg is not installed here')\n")
    doc = small_hello_json()
    shape = (doc["camera"]["height"], doc["camera"]["width"], 3)
    script = [frame(FrameType.HELLO, 0, 0.0, json.dumps(doc).encode()), GATE,
              *[frame(FrameType.CAMERA, k, k / 10.0, protocol.encode_camera(np.full(shape, k, np.uint8)))
                for k in range(1, 6)]]
    server = ScriptedServer([script], hold=True)
    graph = Graph(189)
    shadowed = f"{tmp_path}{os.pathsep}{ros_env(189)['PYTHONPATH']}"  # `import simplejpeg` fails there
    bridge = start_bridge(server.port, 189, env_extra={"PYTHONPATH": shadowed})
    try:
        raw = graph.subscribe(Image, "camera/image_raw")
        graph.wait_matched(["camera/image_raw"], 30)
        server.gate.set()
        graph.spin_until(lambda: len(raw) >= 5, 20, "five images")
        topics = dict(graph.node.get_topic_names_and_types())
    finally:
        assert bridge.stop() == 0
        graph.close()
        server.close()
    assert not any(name.endswith("camera/image_raw/compressed") for name in topics), topics
    warnings = [line for line in bridge.lines if "compressed is not advertised" in line]
    assert len(warnings) == 1 and "WARN" in warnings[0] and "pip install simplejpeg" in warnings[0]
    assert not [line for line in bridge.lines if "ERROR" in line], bridge.output()
