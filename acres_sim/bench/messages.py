"""Message classes by the short type names of acres_sim.topics, and the topics of one bridge."""

from __future__ import annotations

from typing import Any


def message_type(name: str) -> Any:
    from nav_msgs.msg import Odometry
    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import CameraInfo, CompressedImage, Image, Imu, NavSatFix, PointCloud2
    from std_msgs.msg import UInt64
    from tf2_msgs.msg import TFMessage

    return {"PointCloud2": PointCloud2, "Image": Image, "CameraInfo": CameraInfo,
            "CompressedImage": CompressedImage, "NavSatFix": NavSatFix, "Imu": Imu,
            "Odometry": Odometry, "TFMessage": TFMessage, "Clock": Clock, "UInt64": UInt64}[name]


def bridge_topics(hello: Any, namespace: str = "", clock: bool = True) -> list[list[str]]:
    """[absolute topic, type name, qos kind] of every topic one bridge publishes for this Hello at
    its defaults, except the compressed image (its JPEG encoding is not what this measures)."""
    from acres_sim.parameters import config_from_values
    from acres_sim.topics import topic_plan

    spec = [["/clock", "Clock", "clock"]] if clock else []
    for topic, (type_name, kind) in topic_plan(hello, config_from_values({})).items():
        if topic.endswith("/compressed"):
            continue
        spec.append([topic if topic.startswith("/") else f"{namespace}/{topic}", type_name, kind])
    return spec
