#!/usr/bin/env python3
"""What a scenario adds to a lockstep step, and how long a run takes to start.

- Collisions.moved() per physics step for two agents driving the loop among 0, 1, 10 and 100
  spawned objects (none in their way: the usual step), and for a vehicle pushing against a bale
  (every step stopped short: the bisection's cost). The objects stand on a grid beside the route, so
  the first cut (a vectorised distance test) finds them near or not as in a scenario.
- The judge per physics step: one agent's states, contacts and farm events through the six criteria
  of the catalogue, with 1, 10 and 100 objects in the world.
- `--run`: the wall time from `scenario FILE` to its first step and to its first commanded step
  (scenarios/bale_ahead.yaml with the tests' stand-in stack), from the run's report.

Figures only, no pass/fail: machines differ.

    python3 -m benchmark.bench_scenario [--steps 1200] [--run]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from types import SimpleNamespace

from acres_sim.fake_game.simulation.collisions import Collisions
from acres_sim.fake_game.simulation.episode_hub import EpisodeHub
from acres_sim.fake_game.simulation.simulation import AgentSimulator
from acres_sim.fake_game.simulation.step_owner import StepContext
from acres_sim.fake_game.simulation.vehicle_model import VEHICLE_PARAMS
from acres_sim.fake_game.simulation.vehicles import vehicle_hello
from acres_sim.fake_game.simulation.world_changes import WorldChanges
from acres_sim.fake_game.world.motion import HeldMotion
from acres_sim.fake_game.world.scene import default_scene
from acres_sim.rotations import quaternion_to_matrix
from acres_sim.scenario.judge import Judge
from acres_sim.scenario.scenario_file import load
from acres_sim.stream.timing import PHYSICS_HZ

VEHICLES = ("polaris", "maxxum")


class Loop:
    """The little of the session an owner uses: its agents, the clock, a log."""

    def __init__(self, agents: list[SimpleNamespace]):
        self.agents = agents
        self.time_s = 0.0
        self.log = lambda line: None


def _agents(scene) -> list[SimpleNamespace]:
    return [SimpleNamespace(name=v, params=VEHICLE_PARAMS[v], driving=None,
                            simulator=AgentSimulator(vehicle_hello(v, agent=v), noise=False,
                                                     start_offset_m=40.0 * i, scene=scene))
            for i, v in enumerate(VEHICLES)]


def per_step_us(objects: int, steps: int, pushing: bool) -> float:
    scene = default_scene()
    agents = _agents(scene)
    loop = Loop(agents)
    changes = WorldChanges(scene, [a.name for a in agents])
    for k in range(objects):  # a grid 30 m north of the loop's south straight: near, not in the way
        changes.spawn(f"bale_{k}", "round_bale", (-40.0 + 4.0 * (k % 20), 10.0 + 4.0 * (k // 20), 0.0),
                      (0.0, 0.0, 0.0, 1.0))
    collisions = Collisions(loop, EpisodeHub(), changes)
    if pushing:  # the Polaris moving east at 2 m/s against a bale it touches
        changes.spawn("wall", "round_bale", (-10.0 + 2.6 + 0.75, -28.0, 0.0), (0.0, 0.0, 0.0, 1.0))
        collisions = Collisions(loop, EpisodeHub(), changes)
    samples = []
    for step in range(1, steps + 1):
        t = step / PHYSICS_HZ
        if pushing:
            agents[0].simulator.place(HeldMotion(t - 1.0 / PHYSICS_HZ, (-10.0, -28.0, 0.0),
                                                 quaternion_to_matrix((0.0, 0.0, 0.0, 1.0)), (2.0, 0.0, 0.0)))
        start = time.perf_counter()
        collisions.moved(StepContext(step, t))
        samples.append(time.perf_counter() - start)
        loop.time_s = t
    if pushing:
        assert collisions.contact_count == steps, collisions.contact_count  # every step was stopped
    return statistics.median(samples) * 1e6


def judge_us(objects: int, steps: int) -> float:
    """The judge's time per physics step (six criteria on one agent)."""
    import tempfile

    text = """acres_scenario: 1
name: judged
duration_s: 1000.0
agents: {polaris: {vehicle: polaris, pose: {x: -10.0, y: -28.0}}}
objects: [{name: bale1, uri: round_bale, pose: {x: 30.0, y: -28.0}}]
criteria:
  - {no_collision: {agent: polaris}}
  - {reach: {agent: polaris, x: 20.0, y: -28.0}}
  - {stop_before: {agent: polaris, entity: bale1, min_distance_m: 2.0}}
  - {min_clearance_m: {agent: polaris, entity: bale1, limit: 1.0}}
  - {max_speed_mps: {agent: polaris, limit: 5.0}}
  - {max_crop_crushed_m2: {agent: polaris, limit: 1.0}}
"""
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(text)
    judge = Judge(load(f.name), 0.0, lambda status: None)
    os.unlink(f.name)
    p = VEHICLE_PARAMS["polaris"]
    judge.on_event("agents", {"agents": [{"name": "polaris", "length_m": p.length_m, "width_m": p.width_m,
                                          "height_m": p.height_m, "rear_overhang_m": p.rear_overhang_m}]})
    pose = {"orientation": {"x": 0.0, "y": 0.0, "z": 0.0, "w": 1.0}}
    judge.on_event("objects", {"objects": [
        {"name": f"bale{k}" if k else "bale1", "uri": "acres://objects/round_bale",
         "pose": {"position": {"x": 30.0 + 3.0 * k, "y": -28.0, "z": 0.0}, **pose},
         "size_m": {"x": 1.5, "y": 1.5, "z": 1.2}} for k in range(objects)]})
    samples = []
    for step in range(1, steps + 1):
        t = step / PHYSICS_HZ
        ns = round(t * 1e9)
        states = {"header": {"stamp": {"sec": ns // 10**9, "nanosec": ns % 10**9}}, "agents": [
            {"name": "polaris", "pose": {"position": {"x": -10.0 + 2.0 * t, "y": -28.0, "z": 0.0}, **pose},
             "twist": {"linear": {"x": 2.0, "y": 0.0, "z": 0.0}}}]}
        start = time.perf_counter()
        judge.on_event("farm_events", {"events": []})
        judge.on_event("states", states)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1e6


def run_start(tmp: str) -> dict:
    """One run of bale_ahead with the tests' stand-in stack: the report's start figures."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parent.parent
    stack = f"{sys.executable} {repo / 'test' / 'support' / 'stack_driver.py'} --agent polaris --speed 3"
    scenario = repo / "scenarios" / "bale_ahead.yaml"
    from acres_sim.scenario.command import runner_args

    subprocess.run(runner_args(scenario, stack=stack, out=tmp, until_decided=True, quiet=True),
                   check=False, capture_output=True, text=True)
    return json.loads((Path(tmp) / "report.json").read_text())


def measure_scenario(steps: int = 1200) -> dict:
    """make bench's figures: collisions and the judge per step, and a run's start."""
    import tempfile

    out: dict = {"collisions_us": {str(n): per_step_us(n, steps, pushing=False) for n in (0, 1, 10, 100)},
                 "pushing_us": {str(n): per_step_us(n, steps, pushing=True) for n in (1, 100)},
                 "judge_us": {str(n): judge_us(n, steps) for n in (1, 10, 100)}}
    with tempfile.TemporaryDirectory(prefix="acres_bench_scenario_") as tmp:
        report = run_start(tmp)
    out.update(first_step_wall_s=report["first_step_wall_s"], run_wall_s=report["wall_time_s"],
               first_command_wall_s=report["first_command_wall_s"], agents=len(VEHICLES))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m benchmark.bench_scenario")
    parser.add_argument("--steps", type=int, default=1200)
    parser.add_argument("--run", action="store_true", help="also time a run's start (starts a session)")
    args = parser.parse_args(argv)
    print(f"collisions per physics step, two agents (median of {args.steps} steps):")
    for objects in (0, 1, 10, 100):
        us = per_step_us(objects, args.steps, pushing=False)
        print(f"  {objects:>3} objects, nothing in the way: {us:8.1f} us per step "
              f"({us / len(VEHICLES):.1f} per agent)")
    for objects in (1, 100):
        us = per_step_us(objects, args.steps, pushing=True)
        print(f"  {objects:>3} objects, the Polaris pushing against one: {us:8.1f} us per step")
    print(f"the judge per physics step, six criteria on one agent (median of {args.steps} steps):")
    for objects in (1, 10, 100):
        print(f"  {objects:>3} objects: {judge_us(objects, args.steps):8.1f} us per step")
    if args.run:
        import tempfile

        with tempfile.TemporaryDirectory(prefix="acres_bench_scenario_") as tmp:
            report = run_start(tmp)
        print(f"scenario bale_ahead: first step {report['first_step_wall_s']:.2f} s after the start, "
              f"first commanded step {report['first_command_wall_s']:.2f} s, whole run "
              f"{report['wall_time_s']:.2f} s ({report['status']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
