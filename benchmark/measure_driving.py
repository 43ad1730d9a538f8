"""Driving figures: the command latency in real time (publish -> the game holds it -> the reports
show it) and the lockstep steps/s of a ROS-only learner that acts before every step, beside the
same learner stepping without commands (one run, interleaved). fake_game --cached, a sim_bridge
and a vehicle_bridge per agent, sim_control with vehicle_bridges."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from harness.processes import (
    DOMAINS,
    Proc,
    json_result,
    ros_env,
    start_bridge,
    start_module,
    start_vehicle_bridge,
)


def _port(game: Proc, prefix: str, agent: str | None = None) -> int:
    line = game.wait_line(lambda s: s.startswith(prefix) and (agent is None or f"agent={agent} " in s), 60)
    return int(line.split("port=")[1].split()[0])


def _session(agents: tuple[str, ...], lockstep: bool) -> tuple[int, Proc, list[Proc]]:
    domain = next(DOMAINS)
    args = ["--ports", ",".join("0" * len(agents)), "--vehicles", ",".join(agents), "--cached",
            "--vehicle-ports", ",".join("0" * len(agents)), "--control-port", "0"]
    game = start_module("acres_sim.fake_game", args + (["--lockstep"] if lockstep else []), domain)
    procs: list[Proc] = []
    try:
        control = _port(game, "ACRES_SIM_CONTROL_LISTENING")
        for index, agent in enumerate(agents):
            port = _port(game, "ACRES_SENSOR_STREAM_LISTENING", agent)
            vport = _port(game, "ACRES_VEHICLE_BRIDGE_LISTENING", agent)
            procs.append(start_bridge(port, domain, {"frame_prefix": f"{agent}/" if len(agents) > 1 else "''",
                                                     "publish_clock": str(index == 0).lower()},
                                      namespace=f"/{agent}"))
            procs.append(start_vehicle_bridge(vport, domain, [f"lockstep:={str(lockstep).lower()}"],
                                              namespace=f"/{agent}"))
        for agent in agents:  # both sockets of every agent taken before anyone steps or drives
            for kind in ("SENSOR_STREAM", "VEHICLE_BRIDGE"):
                game.wait_line(lambda line: line.startswith(f"ACRES_{kind}_CONNECTED agent={agent} "), 60)
        if lockstep:
            procs.append(Proc([sys.executable, "-m", "acres_sim.nodes.sim_control", "--ros-args",
                               "-p", f"control_port:={control}", "-p", f"agents:=[{','.join(agents)}]",
                               "-p", "vehicle_bridges:=true", "-p", "barrier_timeout_s:=30.0"],
                              ros_env(domain), "sim_control"))
    except BaseException:
        for proc in procs:
            proc.stop()
        game.stop()
        raise
    return domain, game, procs


def measure_command_latency(commands: int = 200) -> dict[str, Any]:
    domain, game, procs = _session(("polaris",), lockstep=False)
    try:
        return json_result(start_module("benchmark.driving_learner",
                                        ["latency", str(commands), "0", "polaris"], domain))
    finally:
        for proc in reversed(procs):
            proc.stop()
        game.stop()


def measure_acting_learner(requests: int, agents: tuple[str, ...], steps: int = 1) -> dict[str, Any]:
    domain, game, procs = _session(agents, lockstep=True)
    runs: dict[str, list[dict]] = {}
    try:
        for mode in ("watch", "act", "watch", "act"):  # interleaved: load drifts
            runs.setdefault(mode, []).append(json_result(start_module(
                "benchmark.driving_learner", [mode, str(requests), str(steps), ",".join(agents)], domain)))
    finally:
        for proc in reversed(procs):
            proc.stop()
        game.stop()
    act = float(np.mean([r["steps_per_s"] for r in runs["act"]]))
    watch = float(np.mean([r["steps_per_s"] for r in runs["watch"]]))
    return {"agents": list(agents), "steps_per_request": steps, "acting_steps_per_s": act,
            "watching_steps_per_s": watch, "ratio": act / watch,
            "acting_answer_ms_p50": float(np.mean([r["answer"]["p50_ms"] for r in runs["act"]])),
            "acting_answer_ms_p99": float(np.mean([r["answer"]["p99_ms"] for r in runs["act"]])),
            "runs": runs}
