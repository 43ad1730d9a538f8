"""Collisions of the fake world (ROS-free): no vehicle passes through a spawned object or another
vehicle. An owner of the step (step_owner.py) acting once every agent moved, before any frame of the
step is drawn.

Model. Bodies are upright solids (acres_sim/bodies.py). An agent that moved in a step into a body it
did not overlap before (or deeper into one it did) goes as far along the step's motion as it can
without that (bisection of the step, to 1/256 of it) and stands there at rest: a driven vehicle's
model and track stop there (its next commands act from there: it can back or steer away), an agent
on its route or placed with a twist holds that pose (a command, a placement or a reset moves it on).
The whole step's motion is cut short, not only its part along the normal: there is no sliding. Two
agents that meet both stop. Each such stop is a contact: the agent, the other body, where they touch,
the agent's speed relative to the other's in that step and the direction into the other; the step's
contacts go to the hub (the control channel's watch feed, /sim/contacts and the episode log), and
each contact that begins is logged. A replayed agent moves as its log says and is not stopped; the
replay repeats the log's contacts.

Placements: an agent placed, or an object spawned or moved, so that it overlaps an agent's body (an
object overlapping another object is allowed: bales are stacked) is refused (InvalidPose).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from acres_sim.channels.control import InvalidPose
from acres_sim.episode.log_file import CONTACTS
from acres_sim.fake_game.simulation.episode_hub import EpisodeHub, header
from acres_sim.fake_game.simulation.session_agent import SessionAgent
from acres_sim.fake_game.simulation.step_owner import ResetContext, StepContext, StepOwner, WorldLoop
from acres_sim.fake_game.simulation.world_changes import WORLD_FRAME, WorldChanges
from acres_sim.bodies import Solid, contact, depth, object_body, vehicle_body
from acres_sim.fake_game.world.farm_objects import WorldObject
from acres_sim.fake_game.world.motion import HeldMotion
from acres_sim.stream.timing import PHYSICS_HZ

Planar = tuple[float, float, float]  # x, y, heading of base_footprint
_BISECTIONS = 8  # a blocked step goes as far as 1/256 of its motion short of the body
_EPS_M = 1e-9


class Collisions(StepOwner):
    def __init__(self, loop: WorldLoop, hub: EpisodeHub, changes: WorldChanges):
        self._loop = loop
        self._hub = hub
        self._changes = changes
        self._touching: set[tuple[str, str]] = set()  # the pairs in contact at the last step
        self._objects_key: tuple[int, ...] = ()
        self._objects: list[Solid] = []
        self._centres = np.zeros((0, 2))
        self._reach = np.zeros(0)  # each object's footprint radius about its centre
        self.contact_count = 0

    # -- placements (checked by the world's requests, between steps) -------------------------------

    def check_agent(self, name: str, x: float, y: float, yaw: float) -> None:
        """InvalidPose if the agent's body at this pose would overlap an object or another agent."""
        t = self._loop.time_s
        agent = next(a for a in self._loop.agents if a.name == name)
        body = self._body(agent, (x, y, yaw))
        others = [o.name for o in self._near(body) if depth(body, o) > _EPS_M]
        others += [a.name for a in self._loop.agents
                   if a is not agent and depth(body, self._body(a, a.simulator.planar(t))) > _EPS_M]
        if others:
            raise InvalidPose(f"{name} at ({x:g}, {y:g}) would overlap {', '.join(others)}: "
                              "place it clear of them")

    def check_object(self, placed: WorldObject) -> None:
        """InvalidPose if the object would overlap an agent's body."""
        t = self._loop.time_s
        body = _object_solid(placed)
        agents = [a.name for a in self._loop.agents
                  if depth(body, self._body(a, a.simulator.planar(t))) > _EPS_M]
        if agents:
            raise InvalidPose(f"{placed.name} at ({placed.x:g}, {placed.y:g}) would overlap "
                              f"{', '.join(agents)}: place it clear of the vehicles")

    # -- the world loop ----------------------------------------------------------------------------

    def moved(self, step: StepContext) -> None:
        agents = self._loop.agents
        t_before = step.t - 1.0 / PHYSICS_HZ
        before = {a.name: a.simulator.planar(t_before) for a in agents}
        now = {a.name: a.simulator.planar(step.t) for a in agents}
        attempted = dict(now)
        movers = {a.name: a for a in agents if a.name not in step.replayed and now[a.name] != before[a.name]}
        stopped: dict[str, list[tuple[str, Solid]]] = {}
        for _ in range(len(agents) + 1):  # until no stop puts an agent in another's way
            hits = {name: h for name, agent in movers.items()
                    if (h := self._hits(agent, now[name], before[name], now))}
            if not hits:
                break
            for name, h in hits.items():
                stopped.setdefault(name, h)  # what the step's whole motion ran into
            for group in _groups(hits, movers):
                fraction = self._stop_short([movers[n] for n in group], before, attempted, now)
                for name in group:
                    now[name] = _between(before[name], attempted[name], fraction)
        else:  # the stops did not clear each other: those agents stay where they were
            for name in stopped:
                now[name] = before[name]
        for name, agent in movers.items():  # stopped with an agent that ran into it
            if now[name] != attempted[name] and name not in stopped:
                stopped[name] = [(hitter, self._body(movers[hitter], attempted[hitter]))
                                 for hitter, h in list(stopped.items()) if any(o == name for o, _s in h)]
        if not stopped:
            self._touching.clear()
            return
        contacts = []
        for agent in agents:
            name = agent.name
            if name in stopped:
                self._stop(agent, step.t, now[name])
                velocity = _velocity(before[name], attempted[name])
                contacts += [self._contact(agent, attempted[name], velocity, other, solid, before, attempted)
                             for other, solid in stopped[name]]
        self._publish(step, contacts)

    def after_reset(self, reset: ResetContext) -> None:
        self._touching.clear()

    # -- what met what -----------------------------------------------------------------------------

    def _hits(self, agent: SessionAgent, pose: Planar, before: Planar,
              now: dict[str, Planar]) -> list[tuple[str, Solid]]:
        """The bodies the agent at `pose` is in and was not in (or less deep) at `before`."""
        body, was = self._body(agent, pose), self._body(agent, before)
        others = [(o.name, o) for o in self._near(body)]
        others += [(a.name, self._body(a, now[a.name])) for a in self._loop.agents if a is not agent]
        hits = []
        for name, other in others:
            d = depth(body, other)
            if d > _EPS_M and d > depth(was, other) + _EPS_M:
                hits.append((name, other))
        return hits

    def _stop_short(self, group: list[SessionAgent], before: dict[str, Planar], attempted: dict[str, Planar],
                    now: dict[str, Planar]) -> float:
        """The largest share of the step's motion (before -> attempted) that the agents of a group
        (those that ran into each other) can make together without running into anything."""
        free, blocked = 0.0, 1.0
        trial = dict(now)
        for _ in range(_BISECTIONS):
            middle = 0.5 * (free + blocked)
            for agent in group:
                trial[agent.name] = _between(before[agent.name], attempted[agent.name], middle)
            if any(self._hits(a, trial[a.name], before[a.name], trial) for a in group):
                blocked = middle
            else:
                free = middle
        return free

    def _contact(self, agent: SessionAgent, attempted: Planar, velocity: tuple[float, float], other_name: str,
                 other: Solid, before: dict[str, Planar], now: dict[str, Planar]) -> dict[str, Any]:
        """The Contact of an agent whose step (to `attempted`) ran into `other`."""
        (px, py, pz), (nx, ny, nz) = contact(self._body(agent, attempted), other)
        vx, vy = velocity
        if other_name in now:  # another agent: relative to its own motion in the step
            ox, oy = _velocity(before[other_name], now[other_name])
            vx, vy = vx - ox, vy - oy
        return {"agent": agent.name, "other": other_name, "position": {"x": px, "y": py, "z": pz},
                "relative_speed_mps": math.hypot(vx, vy), "normal": {"x": nx, "y": ny, "z": nz}}

    def _publish(self, step: StepContext, contacts: list[dict[str, Any]]) -> None:
        self.contact_count += len(contacts)
        pairs = {(c["agent"], c["other"]) for c in contacts}
        for c in contacts:
            if (c["agent"], c["other"]) not in self._touching:
                p = c["position"]
                self._loop.log(f"ACRES_FAKE_GAME_CONTACT step={step.step} agent={c['agent']} "
                               f"other={c['other']} x={p['x']:.3f} y={p['y']:.3f} "
                               f"relative_speed_mps={c['relative_speed_mps']:.3f}")
        self._touching = pairs
        self._hub.message(CONTACTS, {"header": dict(header(step.t), frame_id=WORLD_FRAME), "step": step.step,
                                     "contacts": contacts})

    # -- the agents' bodies ------------------------------------------------------------------------

    @staticmethod
    def _body(agent: SessionAgent, pose: Planar) -> Solid:
        p = agent.params
        terrain = agent.simulator.scene.terrain
        ground = terrain.at(pose[0], pose[1])[0] if terrain is not None else 0.0
        return vehicle_body(agent.name, pose[0], pose[1], pose[2], ground, p.length_m, p.width_m, p.height_m,
                            p.rear_overhang_m)

    @staticmethod
    def _stop(agent: SessionAgent, t: float, pose: Planar) -> None:
        """The agent stands at `pose` at world time t, at rest."""
        simulator = agent.simulator
        driving = agent.driving
        if driving is not None and driving.driven and simulator.motion is driving.track:
            driving.stopped_at(t, *pose)
            return
        position, rotation = simulator.on_ground(*pose)
        simulator.place(HeldMotion(t, (float(position[0]), float(position[1]), float(position[2])), rotation))

    # -- the objects -------------------------------------------------------------------------------

    def _near(self, body: Solid) -> list[Solid]:
        """The objects whose footprint's circle reaches the body's (a vectorised first cut); their
        solids are built again when an object was spawned, moved or deleted."""
        placed = list(self._changes.objects.values())
        key = tuple(map(id, placed))
        if key != self._objects_key:
            self._objects_key = key
            self._objects = [_object_solid(o) for o in placed]
            self._centres = np.array([(s.x, s.y) for s in self._objects]).reshape(-1, 2)
            self._reach = np.array([s.radius or math.hypot(s.half_x, s.half_y) for s in self._objects])
        if not self._objects:
            return []
        reach = math.hypot(body.half_x, body.half_y) + body.radius
        d2 = ((self._centres - (body.x, body.y)) ** 2).sum(axis=1)
        return [self._objects[i] for i in np.flatnonzero(d2 < (self._reach + reach) ** 2)]


def _object_solid(placed: WorldObject) -> Solid:
    kind = placed.kind
    return object_body(placed.name, kind.shape if kind.shape == "box" else "cylinder", kind.size_m,
                       placed.x, placed.y, placed.z, placed.yaw)


def _groups(hits: dict[str, list[tuple[str, Solid]]], movers: dict[str, Any]) -> list[set[str]]:
    """The agents that ran into something, grouped with the moving agents they ran into (those stop
    together, at the same share of the step)."""
    groups: list[set[str]] = []
    for name, h in hits.items():
        joined = {name} | {other for other, _solid in h if other in movers}
        for group in [g for g in groups if g & joined]:
            groups.remove(group)
            joined |= group
        groups.append(joined)
    return groups


def _between(a: Planar, b: Planar, f: float) -> Planar:
    return (a[0] + f * (b[0] - a[0]), a[1] + f * (b[1] - a[1]), a[2] + f * (b[2] - a[2]))


def _velocity(a: Planar, b: Planar) -> tuple[float, float]:
    """The planar velocity of a step from a to b."""
    return ((b[0] - a[0]) * PHYSICS_HZ, (b[1] - a[1]) * PHYSICS_HZ)
