"""The topics a Hello makes sim_bridge advertise and the rates it promises (ROS-free); the names
themselves are acres_sim.topics'."""

from __future__ import annotations

from acres_sim.stream.protocol import FrameType

from acres_sim.stream.timing import PHYSICS_HZ

from acres_sim.stream.hello import Hello
from acres_sim.topics import (
    CAMERA_COMPRESSED,
    CAMERA_IMAGE,
    CAMERA_INFO,
    GROUND_TRUTH_ODOM,
    INS_FIX,
    INS_IMU,
    INS_ODOM,
    INS_ODOM_UTM,
    LIDAR_POINTS,
    TF,
)


def topic_plan(hello: Hello, *, ground_truth: bool = True, tf: bool = True,
               compressed: bool = True) -> dict[str, tuple[str, str]]:
    """The data topics the bridge advertises for this Hello: relative name (plus the absolute /tf)
    -> (message type name, QoS kind: sensor = the qos_* parameters, tf = tf2's /tf QoS).
    `ground_truth`, `tf`: publish_ground_truth and tf_source != none; `compressed`: whether JPEG can
    be encoded here (else no compressed topic)."""
    plan: dict[str, tuple[str, str]] = {}
    if hello.lidar.enabled:
        plan[LIDAR_POINTS] = ("PointCloud2", "sensor")
    if hello.camera.enabled:
        plan[CAMERA_IMAGE] = ("Image", "sensor")
        plan[CAMERA_INFO] = ("CameraInfo", "sensor")
        if compressed:
            plan[CAMERA_COMPRESSED] = ("CompressedImage", "sensor")
    if hello.ins.enabled:
        plan[INS_FIX] = ("NavSatFix", "sensor")
        plan[INS_IMU] = ("Imu", "sensor")
        plan[INS_ODOM] = ("Odometry", "sensor")
        if hello.georeferenced:
            plan[INS_ODOM_UTM] = ("Odometry", "sensor")
        if ground_truth:
            plan[GROUND_TRUTH_ODOM] = ("Odometry", "sensor")
        if tf:
            plan[TF] = ("TFMessage", "tf")
    return plan


def expected_rates(hello: Hello | None) -> dict[int, float]:
    """Frames per second of simulation time the Hello promises (the physics clock is 120 Hz)."""
    rates: dict[int, float] = {FrameType.CLOCK: float(PHYSICS_HZ)}
    if hello is not None:
        if hello.ins.enabled:
            rates[FrameType.INS] = hello.ins.hz
        if hello.lidar.enabled:
            rates[FrameType.LIDAR] = hello.lidar.hz
        if hello.camera.enabled:
            rates[FrameType.CAMERA] = hello.camera.hz
    return rates
