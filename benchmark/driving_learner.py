"""A learner that drives through ROS only:
`python3 -m benchmark.driving_learner MODE REQUESTS STEPS AGENTS`.

MODE act: before each step_simulation of STEPS steps it publishes an Ackermann command to every
agent (sim_control then waits until each vehicle holds it); watch: the same calls, no command.
MODE latency (real time, no sim_control): REQUESTS Ackermann commands at 20 Hz to the first agent,
each with its own header stamp, and the time from publishing to the vehicle_bridge's
vehicle/held_command naming that stamp (the game holds it, applied from its next physics step)
and, where ds_dbw_msgs imports, to the first steering report whose requested angle is the new one.
Prints one JSON line."""

from __future__ import annotations

import json
import math
import sys
import threading
import time

import numpy as np
import rclpy
from ackermann_msgs.msg import AckermannDriveStamped
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from simulation_interfaces.msg import Result
from simulation_interfaces.srv import StepSimulation
from std_msgs.msg import Empty, Header

from harness.graph import leave_graph

TIMEOUT_S = 10.0
HELD_QOS = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                      reliability=ReliabilityPolicy.RELIABLE)


def _percentiles(seconds: list[float]) -> dict[str, float]:
    ms = np.array(seconds) * 1e3
    return {"p50_ms": float(np.percentile(ms, 50)), "p99_ms": float(np.percentile(ms, 99)),
            "samples": len(ms)}


def main(argv: list[str]) -> int:
    mode, requests, steps, agents = argv[0], int(argv[1]), int(argv[2]), argv[3].split(",")
    rclpy.init()
    node = rclpy.create_node("bench_driving_learner")
    held: dict[str, Header] = {}
    arrived: dict[tuple[int, int], float] = {}
    steer_seen: list[tuple[float, float]] = []
    changed = threading.Condition()

    def on_held(agent: str):
        def take(msg: Header) -> None:
            with changed:
                held[agent] = msg
                arrived.setdefault((msg.stamp.sec, msg.stamp.nanosec), time.monotonic())
                changed.notify_all()
        return take

    subs = [node.create_subscription(Header, f"/{a}/vehicle/held_command", on_held(a), HELD_QOS)
            for a in agents]
    pubs = {a: node.create_publisher(AckermannDriveStamped, f"/{a}/vehicle/ackermann_cmd", 10)
            for a in agents}
    disable = {a: node.create_publisher(Empty, f"/{a}/vehicle/disable", 10) for a in agents}
    try:  # only where it is measured: a reader of the reports makes every vehicle barrier wait for it
        if mode != "latency":
            raise ImportError
        from ds_dbw_msgs.msg import SteeringReport
        subs.append(node.create_subscription(
            SteeringReport, f"/{agents[0]}/vehicle/steering/report",
            lambda m: steer_seen.append((time.monotonic(), m.cmd)), 100))
    except ImportError:  # Kilted: no drive-by-wire reports
        pass
    client = node.create_client(StepSimulation, "/step_simulation")
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    deadline = time.monotonic() + 60.0
    while not (all(s.get_publisher_count() for s in subs)
               and all(p.get_subscription_count() for p in pubs.values())
               and (mode == "latency" or client.service_is_ready())):
        if time.monotonic() > deadline:
            raise SystemExit("the vehicle_bridges or sim_control did not appear within 60 s")
        executor.spin_once(timeout_sec=0.05)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()

    def command(agent: str, steer: float, stamp_ns: int = 0) -> None:
        msg = AckermannDriveStamped()
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp_ns, 1_000_000_000)
        msg.drive.steering_angle, msg.drive.speed = steer, 2.0
        pubs[agent].publish(msg)

    def wait_driving(agents_driven: list[str]) -> None:
        """Until each vehicle holds an Ackermann command: the first ones may come before the
        vehicle_bridge met its vehicle (then they are ignored), so they are sent again."""
        deadline = time.monotonic() + 30.0
        while True:
            for agent in agents_driven:
                command(agent, 0.0)
            with changed:
                if changed.wait_for(lambda: all(held.get(a) is not None and held[a].frame_id == "ackermann"
                                                for a in agents_driven), 0.2):
                    return
            if time.monotonic() > deadline:
                raise SystemExit(f"the vehicles never held a command: {held}")

    result: dict = {"mode": mode}
    if mode == "latency":
        wait_driving(agents[:1])
        to_held, to_report = [], []
        for k in range(requests):
            steer = 0.1 if k % 2 else -0.1
            stamp_ns = 1_000_000_000 + k * 1000  # unique; the watchdog counts arrival, not this
            key = divmod(stamp_ns, 1_000_000_000)
            mark = len(steer_seen)
            sent = time.monotonic()
            command(agents[0], steer, stamp_ns)
            with changed:
                if not changed.wait_for(lambda: key in arrived, TIMEOUT_S):
                    raise SystemExit(f"command {k} was never held")
                to_held.append(arrived[key] - sent)
            time.sleep(0.05)
            seen = [t for t, cmd in steer_seen[mark:] if cmd * steer > 0]  # the request changed sides
            if seen:
                to_report.append(seen[0] - sent)
        result["publish_to_held"] = _percentiles(to_held)
        if to_report:
            result["publish_to_steering_report"] = _percentiles(to_report)
    else:
        if mode == "act":
            wait_driving(agents)  # the first command of a session is not awaited by sim_control
        answers = []
        t0 = time.monotonic()
        for k in range(requests):
            if mode == "act":
                for agent in agents:
                    command(agent, 0.2 * math.sin(k / 50.0))
            sent = time.monotonic()
            future = client.call_async(StepSimulation.Request(steps=steps))
            done = threading.Event()
            future.add_done_callback(lambda _f: done.set())
            if not done.wait(TIMEOUT_S) or future.result().result.result != Result.RESULT_OK:
                raise SystemExit(f"step_simulation failed: {future.result()}")
            answers.append(time.monotonic() - sent)
        seconds = time.monotonic() - t0
        if mode == "act":  # no longer under command: a later learner that does not act is not awaited
            for agent in agents:
                disable[agent].publish(Empty())
            with changed:
                changed.wait_for(lambda: all(held[a].frame_id == "" for a in agents), TIMEOUT_S)
        result.update({"steps": requests * steps, "seconds": seconds,
                       "steps_per_s": requests * steps / seconds, "answer": _percentiles(answers)})
    print(json.dumps(result), flush=True)
    leave_graph(executor, spinner, node)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
