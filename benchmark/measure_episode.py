"""What the episode log costs: fake_game with two agents (Polaris, Maxxum) in lockstep, stepped 12
steps at a time on its control channel as fast as it answers, simulating alone, recording the
episode log, and replaying the recorded log, in turns (three rounds): the game's CPU per physics
step, steps/s, and the log's bytes per simulated minute. Renders are cached (--cached) so that the
episode's own work is what differs."""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from acres_sim.game.control_client import ControlClient
from harness.processes import Proc
from harness.workload import process_cpu_s

WARMUP_REQUESTS = 5


def _run(extra: list[str], requests: int) -> dict[str, float]:
    game = Proc([sys.executable, "-m", "acres_sim.fake_game", "--lockstep", "--control-port", "0",
                 "--ports", "0,0", "--vehicles", "polaris,maxxum", "--cached", *extra],
                dict(os.environ), "fake_game")
    try:
        line = game.wait_line(lambda s: s.startswith("ACRES_SIM_CONTROL_LISTENING"), 60)
        control = ControlClient(int(line.rsplit("=", 1)[1]), timeout_s=60.0)
        for _ in range(WARMUP_REQUESTS):
            control.step(12)
        cpu0, t0 = process_cpu_s(game.pid), time.perf_counter()
        for _ in range(requests):
            control.step(12)
        cpu1, t1 = process_cpu_s(game.pid), time.perf_counter()
        control.close()
    finally:
        game.stop()
    steps = requests * 12
    return {"steps_per_s": steps / (t1 - t0), "cpu_ms_per_step": (cpu1 - cpu0) * 1000.0 / steps}


def measure_episode(tmp: Path, requests: int = 100) -> dict[str, Any]:
    rounds: dict[str, list[dict[str, float]]] = {"simulate": [], "record": [], "replay": []}
    sizes = []
    for index in range(3):
        log = tmp / f"episode-{index}.mcap"
        rounds["simulate"].append(_run([], requests))
        rounds["record"].append(_run(["--episode-log", str(log)], requests))
        sizes.append(log.stat().st_size)
        rounds["replay"].append(_run(["--episode-replay", str(log)], requests))
    simulated_s = (WARMUP_REQUESTS + requests) * 12 / 120.0

    def median(kind: str, key: str) -> float:
        return statistics.median(r[key] for r in rounds[kind])

    return {
        "requests": requests, "agents": 2, "rounds": rounds,
        "cpu_ms_per_step": {k: median(k, "cpu_ms_per_step") for k in rounds},
        "steps_per_s": {k: median(k, "steps_per_s") for k in rounds},
        "record_extra_cpu_ms_per_step": statistics.median(
            r["cpu_ms_per_step"] - s["cpu_ms_per_step"]
            for r, s in zip(rounds["record"], rounds["simulate"])),
        "bytes_per_simulated_minute": statistics.median(sizes) / simulated_s * 60.0,
        "bytes_per_step": statistics.median(sizes) / (simulated_s * 120.0),
    }
