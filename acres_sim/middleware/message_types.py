"""The message class of every type name acres_sim.convert.topic_plan uses (needs the ROS message packages):
the bridge creates its publishers from it, the demo and the benchmark their subscriptions."""

from __future__ import annotations

from typing import Any

from diagnostic_msgs.msg import DiagnosticArray
from nav_msgs.msg import Odometry
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import CameraInfo, CompressedImage, Image, Imu, NavSatFix, PointCloud2
from std_msgs.msg import UInt64
from tf2_msgs.msg import TFMessage

MESSAGE_TYPES: dict[str, Any] = {
    cls.__name__: cls
    for cls in (PointCloud2, Image, CameraInfo, CompressedImage, NavSatFix, Imu, Odometry, TFMessage, Clock,
                UInt64, DiagnosticArray)
}


def message_type(name: str) -> Any:
    """The class of a short type name ("PointCloud2"); KeyError names an unknown one."""
    return MESSAGE_TYPES[name]
