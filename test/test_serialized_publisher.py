"""SerializedPublisher against a real rclpy graph: the bytes a subscriber receives are the bytes
published, through rcl with the GIL released (large messages) and through rclpy (small ones, and
the fallback). ROS_DOMAIN_ID 195."""

from __future__ import annotations

import sys

import numpy as np
from rclpy.qos import QoSProfile
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import Image

from _bridge_support import Graph
from acres_sim import cdr
from acres_sim.serialized_publisher import RELEASE_GIL_FROM, SerializedPublisher, releases_gil


def test_subscribers_receive_the_published_bytes_on_every_path():
    assert releases_gil(), "librcl was not found in this process: every publish would hold the GIL"
    graph = Graph(195)
    try:
        received: list[bytes] = []
        sub = graph.node.create_subscription(Image, "wire_test", received.append, QoSProfile(depth=50),
                                             raw=True)
        wire = SerializedPublisher(graph.node.create_publisher(Image, "wire_test", QoSProfile(depth=50)))
        fallback = SerializedPublisher(wire.publisher)
        fallback._rcl = None  # as where librcl cannot be found: rclpy's publish(bytes)
        graph.spin_until(lambda: sub.get_publisher_count() > 0, 15, "the publisher matched")
        graph.spin_for(0.5)
        rng = np.random.default_rng(1)
        big = cdr.ImageEncoder("camera_optical", 512, 896, "bgr8")
        small = cdr.ImageEncoder("camera_optical", 2, 3, "bgr8")
        sent = [big.encode(7, 11, 2688, rng.integers(0, 256, 512 * 2688, np.uint8).tobytes()),  # rcl
                small.encode(8, 12, 9, bytes(range(18))),  # rclpy: below RELEASE_GIL_FROM
                bytearray(big.encode(9, 13, 2688, bytes(512 * 2688))),  # rcl, from a bytearray
                big.encode(10, 14, 2688, b"\x05" * (512 * 2688))]  # the fallback
        assert len(sent[0]) >= RELEASE_GIL_FROM > len(sent[1])
        wire.publish(sent[0])
        wire.publish(sent[1])
        references = sys.getrefcount(sent[2])
        wire.publish(sent[2])
        # rcl is done with the buffer when publish() returns, and nothing keeps it: the stream reader
        # takes a payload's buffer again once nothing refers to it
        after = sys.getrefcount(sent[2])
        assert after == references
        fallback.publish(sent[3])
        graph.spin_until(lambda: len(received) == 4, 15, "four messages")
    finally:
        graph.close()
    assert [bytes(r) for r in received] == [bytes(s) for s in sent]
    image = deserialize_message(received[0], Image)
    assert (image.header.stamp.sec, image.height, image.width, image.step) == (7, 512, 896, 2688)
