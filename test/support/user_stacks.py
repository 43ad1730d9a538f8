#!/usr/bin/env python3
"""Stacks as users write them, for the scenario tests: nothing in them knows of lockstep. Each runs
on `use_sim_time` and talks through relative topic names that the test remaps, as a user's launch
file would (`odom`, `ackermann_cmd`, `cmd_vel`, `steering_cmd`, `throttle_cmd`, `brake_cmd`,
`enable`, `dbw_enabled`). They follow the line y = line_y eastwards at `speed` and stop past `stop_x`
(ROS parameters).

    user_stacks.py pursuit --ros-args -p use_sim_time:=true -p rate_hz:=15.0
        -r odom:=/polaris/ground_truth/odom -r ackermann_cmd:=/polaris/vehicle/ackermann_cmd

- pursuit: pure pursuit on a timer at rate_hz, AckermannDriveStamped stamped with now();
  `max_steer` is its own idea of the vehicle's limit (default 1.0 rad: more than a Polaris has).
- reactive: the same controller answering every odometry message, stamped with the odometry's stamp.
- twist: a nav2-like controller: geometry_msgs/Twist on a timer at rate_hz (TwistStamped with
  stamped:=true, stamped with now()).
- dbw: drive-by-wire at rate_hz: enable until the kit says it is enabled, steering (CMD_ANGLE),
  throttle and brake percent, stamped with now().
"""

from __future__ import annotations

import math
import os
import sys
import time

import rclpy
from ackermann_msgs.msg import AckermannDriveStamped
from geometry_msgs.msg import Twist, TwistStamped
from nav_msgs.msg import Odometry
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile
from std_msgs.msg import Bool, Empty

DEBUG = bool(os.environ.get("USER_STACK_DEBUG"))
WHEELBASE_M = 1.9  # what the user's own vehicle file says of a Polaris Ranger (about)


class PurePursuit(Node):
    """Follow y = line_y eastwards at `speed`, stop past stop_x; steering by pure pursuit."""

    def __init__(self, name: str):
        super().__init__(name)
        self.rate_hz = self.declare_parameter("rate_hz", 20.0).value
        self.speed = self.declare_parameter("speed", 3.0).value
        self.line_y = self.declare_parameter("line_y", -28.0).value
        self.stop_x = self.declare_parameter("stop_x", 1.0e9).value
        self.lookahead = self.declare_parameter("lookahead_m", 4.0).value
        self.max_steer = self.declare_parameter("max_steer", 1.0).value
        # a fault for the tests: from this x on, the steering asked is NaN
        self.nan_after_x = self.declare_parameter("nan_after_x", 1.0e9).value
        self.pose: tuple[float, float, float] | None = None
        self.odom_stamp = None
        self.create_subscription(Odometry, "odom", self.on_odom, 10)

    def on_odom(self, msg: Odometry) -> None:
        p, q = msg.pose.pose.position, msg.pose.pose.orientation
        yaw = math.atan2(2.0 * (q.w * q.z + q.x * q.y), 1.0 - 2.0 * (q.y * q.y + q.z * q.z))
        self.pose = (p.x, p.y, yaw)
        self.odom_stamp = msg.header.stamp

    def control(self) -> tuple[float, float] | None:
        """(steering angle, speed), or None before the first odometry."""
        if self.pose is None:
            return None
        x, y, yaw = self.pose
        if x >= self.stop_x:
            return 0.0, 0.0
        gx, gy = x + self.lookahead, self.line_y
        alpha = math.atan2(gy - y, gx - x) - yaw
        steer = math.atan2(2.0 * WHEELBASE_M * math.sin(alpha), self.lookahead)
        steer = max(-self.max_steer, min(self.max_steer, steer))
        return (math.nan if x >= self.nan_after_x else steer), self.speed


class TimerPursuit(PurePursuit):
    def __init__(self):
        super().__init__("pursuit")
        self.pub = self.create_publisher(AckermannDriveStamped, "ackermann_cmd", 10)
        self.create_timer(1.0 / self.rate_hz, self.tick)

    def tick(self) -> None:
        out = self.control()
        if out is None:
            return
        msg = AckermannDriveStamped()
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.drive.steering_angle, msg.drive.speed = out
        self.pub.publish(msg)
        if DEBUG:
            print(f"cmd {msg.header.stamp.sec}.{msg.header.stamp.nanosec:09d} odom {self.odom_stamp.sec}."
                  f"{self.odom_stamp.nanosec:09d} {out[0]:.9f}", flush=True)


class ReactivePursuit(PurePursuit):
    def __init__(self):
        super().__init__("reactive")
        self.pub = self.create_publisher(AckermannDriveStamped, "ackermann_cmd", 10)

    def on_odom(self, msg: Odometry) -> None:
        super().on_odom(msg)
        steer, speed = self.control()
        cmd = AckermannDriveStamped()
        cmd.header.stamp = msg.header.stamp
        cmd.drive.steering_angle, cmd.drive.speed = steer, speed
        self.pub.publish(cmd)
        if DEBUG:
            print(f"cmd {cmd.header.stamp.sec}.{cmd.header.stamp.nanosec:09d}", flush=True)


class TwistFollower(PurePursuit):
    def __init__(self):
        super().__init__("twist_follower")
        self.stamped = self.declare_parameter("stamped", False).value
        self.pub = self.create_publisher(TwistStamped if self.stamped else Twist, "cmd_vel", 10)
        self.create_timer(1.0 / self.rate_hz, self.tick)

    def tick(self) -> None:
        out = self.control()
        if out is None:
            return
        steer, speed = out
        twist = Twist()
        twist.linear.x = speed
        twist.angular.z = speed * math.tan(steer) / WHEELBASE_M
        if self.stamped:
            msg = TwistStamped(twist=twist)
            msg.header.stamp = self.get_clock().now().to_msg()
            self.pub.publish(msg)
        else:
            self.pub.publish(twist)


class DbwDriver(PurePursuit):
    """Throttle and brake by a proportional speed loop; steering-wheel angle by the pursuit."""

    STEERING_RATIO = 16.0

    def __init__(self):
        super().__init__("dbw_driver")
        from ds_dbw_msgs.msg import BrakeCmd, SteeringCmd, ThrottleCmd

        self.msgs = SteeringCmd, ThrottleCmd, BrakeCmd
        self.steering = self.create_publisher(SteeringCmd, "steering_cmd", 10)
        self.throttle = self.create_publisher(ThrottleCmd, "throttle_cmd", 10)
        self.brake = self.create_publisher(BrakeCmd, "brake_cmd", 10)
        self.enable = self.create_publisher(Empty, "enable", 10)
        self.speed_now = 0.0
        self.enabled = False  # as the kit reports it: enable is sent until it says so
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.create_subscription(Bool, "dbw_enabled", lambda m: setattr(self, "enabled", m.data), latched)
        self.create_timer(1.0 / self.rate_hz, self.tick)

    def on_odom(self, msg: Odometry) -> None:
        if DEBUG and self.pose is None:
            stamp = msg.header.stamp
            print(f"first odometry {stamp.sec}.{stamp.nanosec:09d} wall {time.time():.3f}", flush=True)
        super().on_odom(msg)
        self.speed_now = msg.twist.twist.linear.x

    def tick(self) -> None:
        out = self.control()
        if DEBUG:
            now = self.get_clock().now().nanoseconds * 1e-9
            print(f"tick {now:.3f} odometry {out is not None} enabled {self.enabled} wall {time.time():.3f}",
                  flush=True)
        if out is None:
            return
        if not self.enabled:
            self.enable.publish(Empty())
        steer, speed = out
        SteeringCmd, ThrottleCmd, BrakeCmd = self.msgs
        stamp = self.get_clock().now().to_msg()
        error = speed - self.speed_now
        wheel_deg = math.degrees(steer) * self.STEERING_RATIO
        pedal = max(0.0, min(60.0, 40.0 * error + 15.0 * speed))
        s = SteeringCmd(cmd_type=SteeringCmd.CMD_ANGLE, cmd=wheel_deg, enable=True)
        t = ThrottleCmd(cmd_type=ThrottleCmd.CMD_PERCENT, cmd=pedal, enable=True)
        b = BrakeCmd(cmd_type=BrakeCmd.CMD_PERCENT, cmd=0.0 if speed > 0.0 else 60.0, enable=True)
        for msg, pub in ((s, self.steering), (t, self.throttle), (b, self.brake)):
            msg.header.stamp = stamp
            pub.publish(msg)


STYLES = {"pursuit": TimerPursuit, "reactive": ReactivePursuit, "twist": TwistFollower, "dbw": DbwDriver}


def main() -> int:
    args = rclpy.utilities.remove_ros_args(sys.argv)
    if len(args) < 2 or args[1] not in STYLES:
        print(f"usage: user_stacks.py {{{','.join(STYLES)}}} --ros-args ...", file=sys.stderr)
        return 2
    rclpy.init(args=sys.argv)
    node = STYLES[args[1]]()
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
