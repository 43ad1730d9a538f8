"""The entities and the world as the control channel reads and changes them (ROS-free): the
entities (the agents and the spawned objects), their ground truth and placement, the catalogue,
spawning and deleting, conditions and hardware shifts. Each change is made between steps, applied to
every agent's simulator and vehicle, and its latched message goes to the hub (and so the log).
A reset ALL brings the world back as launched; a reset SPAWNED takes the objects away; a replay
applies the logged changes as they fall due."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from acres_sim.channels.control import (
    AGENT_HALF_EXTENT_M,
    BadRequest,
    EntityState,
    InvalidPose,
    UnknownEntity,
    checked_pose,
    finite_vector,
)
from acres_sim.episode.log_file import CONDITIONS, OBJECTS, SHIFTS, WORLD, Topic
from acres_sim.fake_game.simulation.episode_hub import EpisodeHub, header
from acres_sim.fake_game.simulation.session_agent import SessionAgent
from acres_sim.fake_game.simulation.step_owner import ResetContext, StepOwner, WorldLoop
from acres_sim.fake_game.simulation.world_changes import WorldChanges
from acres_sim.fake_game.world.motion import HeldMotion
from acres_sim.rotations import quaternion_to_matrix, quaternion_yaw

_STILL = (0.0, 0.0, 0.0)


def _triple(values: Any) -> tuple[float, float, float]:
    return (float(values[0]), float(values[1]), float(values[2]))


class WorldRequests(StepOwner):
    def __init__(self, loop: WorldLoop, hub: EpisodeHub):
        self._loop = loop
        self._hub = hub
        assert loop.scene is not None, "the session is open"
        self.changes = WorldChanges(loop.scene, [a.name for a in loop.agents])
        # Raises InvalidPose for an agent's pose its body may not take (collisions.py: overlapping).
        self.check_agent: Callable[[str, float, float, float], None] = lambda name, x, y, yaw: None
        # The agents' states read again after a placement (world held): what the world is at now is
        # what a log started or a feed connected before the next step gets.
        self.placed: Callable[[], None] = lambda: None
        self._publish(0.0, WORLD)

    # -- reading -------------------------------------------------------------------------------

    @property
    def entities(self) -> list[str]:
        with self._loop.holding():
            return [a.name for a in self._loop.agents] + list(self.changes.objects)

    @staticmethod
    def spawnables() -> list[dict[str, Any]]:
        return WorldChanges.spawnables()

    def entity_state(self, name: Any) -> EntityState:
        placed = self.changes.objects.get(name) if isinstance(name, str) else None
        if placed is not None:
            with self._loop.holding():
                step, t = self._loop.step_count, self._loop.time_s
            return EntityState(name=placed.name, step=step, time_s=t,
                               position=(placed.x, placed.y, placed.z), orientation=placed.quaternion,
                               linear_velocity=_STILL, angular_velocity=_STILL, linear_acceleration=_STILL,
                               held=True)
        agent = self._agent(name)
        with self._loop.holding():  # not in the middle of a step
            step = self._loop.step_count
            t = self._loop.time_s
            simulator = agent.simulator
            held = isinstance(simulator.motion, HeldMotion)
            kin = simulator.kinematics(t)
        rotation = kin.rotation
        return EntityState(
            name=agent.name, step=step, time_s=t, position=_triple(kin.position),
            orientation=tuple(float(v) for v in kin.quaternion),  # type: ignore[arg-type]
            linear_velocity=_triple(rotation @ kin.velocity_body),
            angular_velocity=_triple(rotation @ kin.angular_rate_body),
            linear_acceleration=_triple(rotation @ kin.acceleration_body), held=held)

    def _agent(self, name: Any) -> SessionAgent:
        for agent in self._loop.agents:
            if agent.name == name:
                return agent
        agents = ", ".join(a.name for a in self._loop.agents) or "none"
        raise UnknownEntity(f"no entity {name!r}; the agents are {agents}, the objects "
                            f"{', '.join(self.changes.objects) or 'none'}")

    # -- changing ------------------------------------------------------------------------------

    def set_entity_state(self, name: Any, position: Any, orientation: Any, linear_velocity: Any = _STILL,
                         angular_velocity: Any = _STILL, on_ground: bool = False) -> EntityState:
        """Place an agent: it holds this pose (moving on with the given world-frame twist) from the
        current world time until a state reset; on_ground: standing on the ground at x, y with the
        orientation's heading (z and tilt from the ground). Move an object: it stands on the ground
        there (a twist is refused: objects do not move by themselves)."""
        if isinstance(name, str) and name in self.changes.objects:
            twist = finite_vector("linear_velocity", linear_velocity, 3) + finite_vector(
                "angular_velocity", angular_velocity, 3)
            if any(twist):
                raise InvalidPose(f"{name} is an object: it stands still (give a zero twist)")
            with self._loop.between_steps():
                self.changes.move(name, position, orientation)
                self._applied(OBJECTS)
            return self.entity_state(name)
        agent = self._agent(name)
        position, quaternion = checked_pose(position, orientation, AGENT_HALF_EXTENT_M)
        velocity = _triple(finite_vector("linear_velocity", linear_velocity, 3))
        spin = _triple(finite_vector("angular_velocity", angular_velocity, 3))
        with self._loop.between_steps():
            yaw = quaternion_yaw(quaternion)
            self.check_agent(agent.name, position[0], position[1], yaw)
            if on_ground:
                ground, rotation = agent.simulator.on_ground(position[0], position[1], yaw)
                position = tuple(float(v) for v in ground)
            else:
                rotation = quaternion_to_matrix(quaternion)
            agent.simulator.place(HeldMotion(self._loop.time_s, position, rotation, velocity, spin))
            self.placed()
        return self.entity_state(name)

    def spawn(self, name: Any, uri: Any, position: Any, orientation: Any, allow_renaming: Any = False
              ) -> EntityState:
        """An object from the catalogue, standing on the ground at (x, y), seen from the next render."""
        if not isinstance(allow_renaming, bool):
            raise BadRequest(f"allow_renaming must be true or false, got {allow_renaming!r}")
        with self._loop.between_steps():
            placed = self.changes.spawn(name, uri, position, orientation, allow_renaming)
            self._applied(OBJECTS)
            self._loop.log(f"ACRES_FAKE_GAME_SPAWNED name={placed.name} uri={placed.kind.uri} "
                           f"x={placed.x:.3f} y={placed.y:.3f} z={placed.z:.3f} yaw={placed.yaw:.4f}")
        return self.entity_state(placed.name)

    def delete(self, name: Any) -> None:
        with self._loop.between_steps():
            self.changes.delete(name)
            self._applied(OBJECTS)
            self._loop.log(f"ACRES_FAKE_GAME_DELETED name={name}")

    def set_conditions(self, values: Any) -> dict[str, Any]:
        with self._loop.between_steps():
            conditions = self.changes.set_conditions(values)
            self._applied(CONDITIONS)
            return conditions.message(header(self._loop.time_s))

    def set_shift(self, agent: Any, values: Any) -> dict[str, Any]:
        with self._loop.between_steps():
            shift = self.changes.set_shift(agent, values)
            self._applied(SHIFTS)
            return shift.message(agent)

    def apply_logged(self, t: float, changes: Iterable[tuple[Topic, dict[str, Any]]]) -> None:
        """(no render in flight) A replay's logged WorldObjects, VehicleShifts and Conditions, due
        at world time t (the step being made)."""
        changed: list[Topic] = []
        for topic, message in changes:
            self.changes.apply_logged(topic, message)
            if topic not in changed:
                changed.append(topic)
        if changed:
            self._applied(*changed, t=t)

    # -- the reset -----------------------------------------------------------------------------

    def after_reset(self, reset: ResetContext) -> None:
        if reset.scope == "spawned":
            if self.changes.clear_objects():
                self._applied(OBJECTS)
        elif reset.scope == "all":
            self.changes.as_launched()
            self._applied(*WORLD)

    def _applied(self, *changed: Topic, t: float | None = None) -> None:
        """(no render in flight) The simulators see the change; its messages, stamped t (default:
        the world's time now), go to the hub."""
        self.changes.apply_to(self._loop.agents)
        self._publish(self._loop.time_s if t is None else t, changed)

    def _publish(self, t: float, changed: tuple[Topic, ...]) -> None:
        for topic in changed:
            self._hub.set_latched(topic, self.changes.message(topic, header(t)))
