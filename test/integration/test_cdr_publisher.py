"""CdrPublisher against a real rclpy graph: the bytes a subscriber receives are the bytes
published, through rcl with the GIL released (large messages) and through rclpy (small ones, and
the fallback). wait_for_all_acked against a subscriber process that stops answering and then
answers again, through rcl and through rclpy. ROS_DOMAIN_IDs 195 and 196."""

from __future__ import annotations

import signal
import sys
import threading
import time

import numpy as np
import pytest
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import Image
from std_msgs.msg import UInt64

from support.bridge import Graph, Process, ros_env
from acres_sim.convert import cdr
from acres_sim.middleware import cdr_publisher
from acres_sim.middleware.cdr_publisher import (
    RELEASE_GIL_FROM,
    CdrPublisher,
    releases_gil,
    wait_for_all_acked,
    why_gil_is_held,
)


def test_subscribers_receive_the_published_bytes_on_every_path():
    assert releases_gil(), "librcl was not found in this process: every publish would hold the GIL"
    graph = Graph(195)
    try:
        received: list[bytes] = []
        sub = graph.node.create_subscription(Image, "wire_test", received.append, QoSProfile(depth=50),
                                             raw=True)
        wire = CdrPublisher(graph.node.create_publisher(Image, "wire_test", QoSProfile(depth=50)))
        fallback = CdrPublisher(wire.publisher)
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


_RELIABLE_SUBSCRIBER = """
import rclpy
from rclpy.qos import QoSProfile, ReliabilityPolicy
from std_msgs.msg import UInt64
rclpy.init()
node = rclpy.create_node("ack_test_subscriber")
sub = node.create_subscription(UInt64, "ack_test", lambda m: None,
                               QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE))
while sub.get_publisher_count() == 0:
    rclpy.spin_once(node, timeout_sec=0.05)
print("MATCHED", flush=True)
while True:
    rclpy.spin_once(node, timeout_sec=0.05)
"""


@pytest.mark.parametrize("path", ["rcl", "rclpy"])
def test_wait_for_all_acked_waits_for_a_subscriber_that_stopped_answering(path, monkeypatch):
    if path == "rclpy":  # as where librcl cannot be found
        monkeypatch.setattr(cdr_publisher, "_load", lambda: None)
    graph = Graph(196)
    subscriber = Process([sys.executable, "-c", _RELIABLE_SUBSCRIBER], ros_env(196))
    try:
        pub = graph.node.create_publisher(UInt64, "ack_test",
                                          QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE))
        subscriber.wait_for("MATCHED", 30)
        graph.spin_until(lambda: pub.get_subscription_count() > 0, 15, "the subscriber matched")
        pub.publish(UInt64(data=1))
        assert wait_for_all_acked([pub], 10.0), "a live reliable subscriber did not acknowledge in 10 s"

        subscriber.proc.send_signal(signal.SIGSTOP)  # its middleware threads stop too: no more acks
        pub.publish(UInt64(data=2))
        started = time.monotonic()
        assert not wait_for_all_acked([pub], 0.5)
        assert time.monotonic() - started >= 0.5  # it waited the whole timeout
        stop = threading.Event()
        stop.set()
        started = time.monotonic()
        assert not wait_for_all_acked([pub], 30.0, stop)  # a stopping node does not wait
        assert time.monotonic() - started < 15.0

        subscriber.proc.send_signal(signal.SIGCONT)
        assert wait_for_all_acked([pub], 10.0), "the resumed subscriber did not acknowledge in 10 s"
    finally:
        subscriber.proc.send_signal(signal.SIGCONT)
        subscriber.stop()
        graph.close()


def test_why_the_gil_is_held_names_the_reason_only_where_it_is():
    graph = Graph(195)
    try:
        publisher = graph.node.create_publisher(UInt64, "gil_test", QoSProfile(depth=1))
        assert why_gil_is_held(publisher) is None  # rclpy with a handle pointer and librcl mapped

        class OlderRclpyPublisher:  # an rclpy whose publisher handle exposes no pointer
            handle = object()

        reason = why_gil_is_held(OlderRclpyPublisher())
        assert reason is not None and "no `pointer`" in reason and "GIL held" in reason
    finally:
        graph.close()
