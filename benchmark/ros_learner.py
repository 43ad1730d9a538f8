"""A learner written only with ROS: `python3 -m benchmark.ros_learner REQUESTS AGENTS [CAMERA_AGENT]`.

Each request calls sim_control's /step_simulation with 12 steps and then reads that step's data from
its own reliable subscriptions: every agent's cloud and odometry of the step's time (and the image
of CAMERA_AGENT). Prints one JSON line: {"mode": "ros_service", "steps", "seconds", "steps_per_s",
"answer_ms_p50", "answer_ms_p99" (call -> answer), "data_after_answer_ms" (answer -> the step's data
in the callbacks, mean)}.
"""

from __future__ import annotations

import json
import sys
import threading
import time

import numpy as np
import rclpy
from nav_msgs.msg import Odometry
from rclpy.executors import SingleThreadedExecutor
from sensor_msgs.msg import Image, PointCloud2
from simulation_interfaces.msg import Result
from simulation_interfaces.srv import GetEntityState, StepSimulation

from harness.graph import leave_graph

STEPS_PER_REQUEST = 12
TIMEOUT_S = 10.0


def _ns(stamp) -> int:
    return stamp.sec * 1_000_000_000 + stamp.nanosec


def main(argv: list[str]) -> int:
    requests, agents = int(argv[0]), argv[1].split(",")
    camera_agent = argv[2] if len(argv) > 2 else ""
    rclpy.init()
    node = rclpy.create_node("bench_ros_learner")
    latest: dict[str, int] = {}
    changed = threading.Condition()

    def keep(topic: str):
        def on_message(msg) -> None:
            with changed:
                latest[topic] = _ns(msg.header.stamp)
                changed.notify_all()
        return on_message

    topics = {f"/{a}/lidar/points": PointCloud2 for a in agents}
    topics.update({f"/{a}/ins/odom": Odometry for a in agents})
    if camera_agent:
        topics[f"/{camera_agent}/camera/image_raw"] = Image
    subs = [node.create_subscription(kind, topic, keep(topic), 5) for topic, kind in topics.items()]
    client = node.create_client(StepSimulation, "/step_simulation")
    state = node.create_client(GetEntityState, "/get_entity_state")
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    deadline = time.monotonic() + 60.0
    while not (client.service_is_ready() and all(s.get_publisher_count() for s in subs)):
        if time.monotonic() > deadline:
            raise SystemExit("sim_control or the bridges' topics did not appear within 60 s")
        executor.spin_once(timeout_sec=0.05)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()

    def call(client, request):
        future = client.call_async(request)
        done = threading.Event()
        future.add_done_callback(lambda _f: done.set())
        if not done.wait(TIMEOUT_S) or future.result().result.result != Result.RESULT_OK:
            raise SystemExit(f"{client.srv_name} failed: {future.result()}")
        return future.result()

    # the world step now (other learners may have stepped this world): from the entity state's stamp
    step = round(_ns(call(state, GetEntityState.Request(entity=agents[0])).state.header.stamp) * 120 / 1e9)

    answers: list[float] = []
    after: list[float] = []
    t0 = time.monotonic()
    for _ in range(requests):
        sent = time.monotonic()
        call(client, StepSimulation.Request(steps=STEPS_PER_REQUEST))
        answered = time.monotonic()
        answers.append(answered - sent)
        step += STEPS_PER_REQUEST  # the answer carries no step: the learner counts
        want = round(step / 120 * 1e9)
        with changed:
            if not changed.wait_for(lambda: all(latest.get(t, -1) >= want for t in topics), TIMEOUT_S):
                raise SystemExit(f"the data of step {step} did not come: {latest}")
        after.append(time.monotonic() - answered)
    seconds = time.monotonic() - t0
    steps = requests * STEPS_PER_REQUEST
    ms = np.array(answers) * 1e3
    print(json.dumps({"mode": "ros_service", "steps": steps, "seconds": seconds,
                      "steps_per_s": steps / seconds,
                      "answer_ms_p50": float(np.percentile(ms, 50)),
                      "answer_ms_p99": float(np.percentile(ms, 99)),
                      "data_after_answer_ms": float(np.mean(after) * 1e3)}), flush=True)
    leave_graph(executor, spinner, node)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
