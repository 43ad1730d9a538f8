"""The topics a Hello makes sim_bridge advertise, and the rates it promises (ROS-free)."""

from __future__ import annotations

from acres_sim.parameters import BridgeConfig
from acres_sim.protocol import FrameType, Hello


def topic_plan(hello: Hello, config: BridgeConfig, jpeg: bool = True) -> dict[str, tuple[str, str]]:
    """The data topics the bridge advertises for this Hello: relative name (plus the absolute /tf)
    -> (message type name, QoS kind: sensor = the qos_* parameters, tf = tf2's /tf QoS).
    `jpeg`: whether JPEG can be encoded here (else no compressed topic)."""
    plan: dict[str, tuple[str, str]] = {}
    if hello.lidar.enabled:
        plan["lidar/points"] = ("PointCloud2", "sensor")
    if hello.camera.enabled:
        plan["camera/image_raw"] = ("Image", "sensor")
        plan["camera/camera_info"] = ("CameraInfo", "sensor")
        if jpeg:
            plan["camera/image_raw/compressed"] = ("CompressedImage", "sensor")
    if hello.ins.enabled:
        plan["ins/fix"] = ("NavSatFix", "sensor")
        plan["ins/imu"] = ("Imu", "sensor")
        plan["ins/odom"] = ("Odometry", "sensor")
        if hello.georeferenced:
            plan["ins/odom_utm"] = ("Odometry", "sensor")
        if config.publish_ground_truth:
            plan["ground_truth/odom"] = ("Odometry", "sensor")
        if config.convert.tf_source != "none":
            plan["/tf"] = ("TFMessage", "tf")
    return plan


def expected_rates(hello: Hello | None) -> dict[int, float]:
    """Frames per second of simulation time the Hello promises (the physics clock is 120 Hz)."""
    rates: dict[int, float] = {FrameType.CLOCK: 120.0}
    if hello is not None:
        if hello.ins.enabled:
            rates[FrameType.INS] = hello.ins.hz
        if hello.lidar.enabled:
            rates[FrameType.LIDAR] = hello.lidar.hz
        if hello.camera.enabled:
            rates[FrameType.CAMERA] = hello.camera.hz
    return rates
