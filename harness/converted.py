"""The converter's CDR bytes as rclpy messages (deserialized), for the tests and the benchmark: the
bridge itself publishes the bytes and never builds these."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from nav_msgs.msg import Odometry
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import CameraInfo, Image, Imu, NavSatFix, PointCloud2
from tf2_msgs.msg import TFMessage

from acres_sim.convert.converter import FrameConverter
from acres_sim.stream.protocol import CameraFrame, FrameHeader, LidarFrame


@dataclass
class InsMessages:
    """Everything one INS epoch publishes."""

    fix: NavSatFix
    imu: Imu
    odom: Odometry
    odom_utm: Odometry | None  # None while not georeferenced (any UTM value NaN)
    ground_truth: Odometry
    tf: TFMessage | None  # None when tf_source is "none"


_INS_TYPES = (NavSatFix, Imu, Odometry, Odometry, Odometry, TFMessage)  # in the order of InsCdr


def pointcloud(converter: FrameConverter, header: FrameHeader, frame: LidarFrame) -> PointCloud2:
    """The cloud of converter.pointcloud_cdr() as a message."""
    return deserialize_message(converter.pointcloud_cdr(header, frame), PointCloud2)


def image(converter: FrameConverter, header: FrameHeader, frame: CameraFrame) -> tuple[Image, CameraInfo]:
    """The image of converter.image_cdr() as a message, and its info."""
    return deserialize_message(converter.image_cdr(header, frame), Image), converter.camera_info(header)


def ins(converter: FrameConverter, header: FrameHeader, values: np.ndarray) -> InsMessages:
    """One INS epoch as messages: the serialized ones of converter.ins_cdr(), deserialized."""
    epoch = converter.ins_cdr(header, values)
    return InsMessages(*(None if data is None else deserialize_message(data, kind)
                         for data, kind in zip(epoch, _INS_TYPES)))
