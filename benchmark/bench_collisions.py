#!/usr/bin/env python3
"""What the fake world's collisions add to a physics step: Collisions.moved() per step for two
agents driving the loop among 0, 1, 10 and 100 spawned objects (none in their way: the usual step),
and for a vehicle pushing against a bale (every step stopped short: the bisection's cost). The
objects stand on a grid beside the route, so the first cut (a vectorised distance test) finds them
near or not as it would in a scenario. Figures only, no pass/fail: machines differ.

    python3 -m benchmark.bench_collisions [--steps 1200]
"""

from __future__ import annotations

import argparse
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m benchmark.bench_collisions")
    parser.add_argument("--steps", type=int, default=1200)
    args = parser.parse_args(argv)
    print(f"collisions per physics step, two agents (median of {args.steps} steps):")
    for objects in (0, 1, 10, 100):
        us = per_step_us(objects, args.steps, pushing=False)
        print(f"  {objects:>3} objects, nothing in the way: {us:8.1f} us per step "
              f"({us / len(VEHICLES):.1f} per agent)")
    for objects in (1, 100):
        us = per_step_us(objects, args.steps, pushing=True)
        print(f"  {objects:>3} objects, the Polaris pushing against one: {us:8.1f} us per step")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
