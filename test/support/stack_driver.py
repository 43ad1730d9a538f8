#!/usr/bin/env python3
"""A stand-in for a user's stack in the scenario tests: it reads /sim/agent_states and answers every
command period (--period-s, the scenario's command_period_s) with an Ackermann command stamped with
that step's world time (so that every step request starts from a command of its own world time, and
the run is the same whatever the timing), driving its agent straight on at
--speed. --wait-s W: it stands for the first W s; --stop-after-m D: it asks for a stop once it has
come D m less the braking distance at --decel (a driver that brakes in time); --silent-after S: it
stops answering after S s; --never: it sends nothing; --jitter-ms N: each answer waits up to N ms
(a seeded draw).

    python3 stack_driver.py --agent polaris --speed 3 [--stop-after-m 8] [--wait-s 5] [--jitter-ms 20]
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time

import rclpy
from ackermann_msgs.msg import AckermannDriveStamped
from acres_interfaces.msg import AgentStates
from rclpy.executors import ExternalShutdownException
from rclpy.qos import QoSProfile, ReliabilityPolicy


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--agent", default="polaris")
    p.add_argument("--speed", type=float, default=3.0)
    p.add_argument("--stop-after-m", type=float, default=None)
    p.add_argument("--wait-s", type=float, default=0.0)
    p.add_argument("--decel", type=float, default=1.5, help="m/s2 the stop is planned with")
    p.add_argument("--silent-after", type=float, default=None)
    p.add_argument("--never", action="store_true")
    p.add_argument("--jitter-ms", type=float, default=0.0)
    p.add_argument("--period-s", type=float, default=0.1, help="answer the states of every PERIOD_S s")
    args = p.parse_args()
    rclpy.init()
    node = rclpy.create_node(f"stack_driver_{args.agent}")
    publisher: list = []  # created once it listens: the runner takes a publisher for "the stack is up"
    draw = random.Random(7)
    first: dict[str, float] = {}  # the world time and place of the first states seen

    def on_states(msg: AgentStates) -> None:
        t = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
        me = next((a for a in msg.agents if a.name == args.agent), None)
        if me is None:
            return
        if not first:
            first.update(t=t, x=me.pose.position.x, y=me.pose.position.y)
        if args.never or (args.silent_after is not None and t - first["t"] > args.silent_after):
            return
        periods = t / args.period_s  # the world steps from time 0 in command periods
        if abs(periods - round(periods)) > 1e-6:
            return  # mid-request: the world steps on without waiting; answer its last state only
        speed = 0.0 if t - first["t"] < args.wait_s else args.speed
        if args.stop_after_m is not None:
            come = math.hypot(me.pose.position.x - first["x"], me.pose.position.y - first["y"])
            if come >= args.stop_after_m - args.speed ** 2 / (2.0 * args.decel):
                speed = 0.0
        if args.jitter_ms > 0:
            time.sleep(draw.uniform(0.0, args.jitter_ms) / 1000.0)
        cmd = AckermannDriveStamped()
        cmd.header.stamp = msg.header.stamp
        cmd.drive.speed = speed
        publisher[0].publish(cmd)

    node.create_subscription(AgentStates, "/sim/agent_states", on_states,
                             QoSProfile(depth=120, reliability=ReliabilityPolicy.RELIABLE))
    publisher.append(node.create_publisher(AckermannDriveStamped, f"/{args.agent}/vehicle/ackermann_cmd", 10))
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
