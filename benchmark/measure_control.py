"""The ROS-only learner (sim_control's step_simulation, then the step's data from its own
subscriptions) against a learner on the control channel alone, on one fake game (lockstep,
--cached), one bridge per agent, sim_control and a reliable subscriber on every topic."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from harness.processes import DOMAINS, Proc, json_result, ready, ros_env, start_bridge, start_module

AGENT_SETS = {1: ("polaris",), 2: ("polaris", "maxxum")}


def _port(game: Proc, prefix: str, agent: str | None = None) -> int:
    line = game.wait_line(lambda s: s.startswith(prefix) and (agent is None or f"agent={agent} " in s), 60)
    return int(line.split("port=")[1].split()[0])


def measure_sim_control(tmp: Path, requests: int, agent_count: int, profile: bool = False) -> dict[str, Any]:
    """With `profile`, the subscriber, sim_control and the learners load the bridge's Fast DDS file
    (their readers then answer heartbeats at once instead of after 5 ms)."""
    from acres_sim.middleware.dds import shipped_environment
    from acres_sim.fake_game.simulation.vehicles import vehicle_hello
    from benchmark.messages import bridge_topics

    agents = AGENT_SETS[agent_count]
    domain = next(DOMAINS)
    game = start_module("acres_sim.fake_game", [
        "--ports", ",".join("0" * len(agents)), "--vehicles", ",".join(agents), "--lockstep", "--cached",
        "--control-port", "0"], domain)
    procs: list[Proc] = []
    try:
        ports = [_port(game, "ACRES_SENSOR_STREAM_LISTENING", a) for a in agents]
        control = _port(game, "ACRES_SIM_CONTROL_LISTENING")
        spec = []
        for agent in agents:
            spec += bridge_topics(vehicle_hello(agent), f"/{agent}", clock=False)
        subscriber = start_module("benchmark.subscriber", [json.dumps(spec), str(tmp / "control_sub.json")],
                                  domain, profile)
        procs.append(subscriber)
        for index, (agent, port) in enumerate(zip(agents, ports)):
            procs.append(start_bridge(port, domain, {"frame_prefix": f"{agent}/" if len(agents) > 1 else "''",
                                                     "publish_clock": str(index == 0).lower()},
                                      namespace=f"/{agent}"))
        env = ros_env(domain)
        if profile:
            env.update(shipped_environment())
        procs.append(Proc([sys.executable, "-m", "acres_sim.nodes.sim_control", "--ros-args", "-p",
                           f"control_port:={control}", "-p", f"agents:=[{','.join(agents)}]"],
                          env, "sim_control"))
        ready(subscriber)
        results: dict[str, list[dict]] = {}
        for mode in ("ros", "control", "ros", "control"):  # interleaved: load drifts
            if mode == "ros":
                args = [str(requests), ",".join(agents), "polaris"]
                line = json_result(start_module("benchmark.ros_learner", args, domain, profile))
            else:
                args = [str(control), str(requests), "control"]
                line = json_result(start_module("benchmark.learner", args, domain, profile))
            results.setdefault(mode, []).append(line)
    finally:
        for proc in reversed(procs):
            proc.stop()
        game.stop()
    ros = float(np.mean([r["steps_per_s"] for r in results["ros"]]))
    ctl = float(np.mean([r["steps_per_s"] for r in results["control"]]))
    return {"agents": list(agents), "ros_steps_per_s": ros, "control_steps_per_s": ctl, "ratio": ros / ctl,
            "answer_ms_p50": float(np.mean([r["answer_ms_p50"] for r in results["ros"]])),
            "answer_ms_p99": float(np.mean([r["answer_ms_p99"] for r in results["ros"]])),
            "control_reply_ms": float(np.mean([r["reply_ms"] for r in results["control"]])),
            "runs": results}
