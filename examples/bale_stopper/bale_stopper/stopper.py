"""Drive ahead at a cruising speed; stop when the LiDAR sees something in the vehicle's path.

Subscribes to /<agent>/lidar/points and /clock; every 0.1 s of simulated time (a /clock past the next
tenth) it publishes an AckermannDriveStamped on /<agent>/vehicle/ackermann_cmd stamped with that
time: the cruising speed, or 0 once a return lies in the corridor ahead (closer than the stopping
distance, within half the vehicle's width plus a margin, above the ground).
"""

import sys

import numpy as np
import rclpy
from ackermann_msgs.msg import AckermannDriveStamped
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import PointCloud2

PERIOD_S = 0.1


class Stopper(Node):
    def __init__(self):
        super().__init__("bale_stopper")
        self.agent = self.declare_parameter("agent", "polaris").value
        self.speed = self.declare_parameter("speed_mps", 3.0).value
        self.stop_m = self.declare_parameter("stop_distance_m", 7.0).value
        self.half_width_m = self.declare_parameter("corridor_half_width_m", 1.2).value
        self.blocked = False
        self.next_s = 0.0
        self.cmd = self.create_publisher(AckermannDriveStamped, f"/{self.agent}/vehicle/ackermann_cmd", 10)
        self.create_subscription(PointCloud2, f"/{self.agent}/lidar/points", self.on_cloud,
                                 qos_profile_sensor_data)
        self.create_subscription(Clock, "/clock", self.on_clock, qos_profile_sensor_data)  # as it is offered

    def on_cloud(self, msg):
        fields = {f.name: f.offset for f in msg.fields}
        raw = np.frombuffer(bytes(msg.data), np.uint8).reshape(-1, msg.point_step)
        xyz = np.stack([raw[:, fields[n]:fields[n] + 4].copy().view(np.float32)[:, 0] for n in "xyz"], axis=1)
        xyz = xyz[np.isfinite(xyz).all(axis=1)]
        # The sensor frame: x forward, z up; the Polaris's LiDAR sits 2 m above the ground, pitched
        # 5 degrees down, so the ground within the stopping distance stays below z = -1 m.
        ahead = (xyz[:, 0] > 0.5) & (xyz[:, 0] < self.stop_m) & (np.abs(xyz[:, 1]) < self.half_width_m)
        self.blocked = bool(np.count_nonzero(ahead & (xyz[:, 2] > -1.0)) >= 5)

    def on_clock(self, msg):
        now = msg.clock.sec + msg.clock.nanosec * 1e-9
        if now + 1e-6 < self.next_s:
            return
        self.next_s = round(now / PERIOD_S) * PERIOD_S + PERIOD_S
        cmd = AckermannDriveStamped()
        cmd.header.stamp = msg.clock
        cmd.drive.speed = 0.0 if self.blocked else float(self.speed)
        self.cmd.publish(cmd)


def main(args=None):
    rclpy.init(args=args)
    node = Stopper()
    try:
        rclpy.spin(node)
    except KeyboardInterrupt:
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
