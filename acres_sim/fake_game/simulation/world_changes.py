"""How a session's world differs from the one it launched with (ROS-free): the objects spawned into
it, its conditions and every agent's hardware shift. One owner, so that the control channel, a reset
and a replay change them in one way, the scene the sensors draw is built in one place, and the
simulators and vehicles are told of a change in one place (apply_to).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from acres_sim.episode.log_file import OBJECTS, SHIFTS, Topic
from acres_sim.channels.control import (
    OBJECT_HALF_EXTENT_M,
    BadRequest,
    InvalidPose,
    NameInvalid,
    NameTaken,
    NotDeletable,
    OutOfRange,
    UnknownEntity,
    UnknownResource,
    checked_pose,
)
from acres_sim.fake_game.simulation.shifts import CALIBRATED, VehicleShift
from acres_sim.fake_game.world.conditions import CLEAR_DAY, Conditions, InvalidConditions
from acres_sim.fake_game.world.farm_objects import CATALOGUE, KINDS, URI_PREFIX, WorldObject, kind_of
from acres_sim.fake_game.world.scene import Scene
from acres_sim.rotations import orientation_yaw, quaternion_yaw

if TYPE_CHECKING:
    from acres_sim.fake_game.simulation.session_agent import SessionAgent

WORLD_FRAME = "map"  # the frame of the objects' poses (the grid ENU world frame)
GROUND_TOLERANCE_M = 2.0  # a requested z this far from the ground is refused (the map's relief is 1.4 m)
MAX_OBJECTS = 1000
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")


class WorldChanges:
    def __init__(self, base: Scene, agents: list[str]):
        self.base = base
        self.agents = list(agents)
        self.objects: dict[str, WorldObject] = {}
        self.conditions: Conditions = CLEAR_DAY
        self.shifts: dict[str, VehicleShift] = dict.fromkeys(self.agents, CALIBRATED)
        self.scene = base
        # Raises InvalidPose for an object that may not stand there (collisions.py: on a vehicle).
        self.check_object: Callable[[WorldObject], None] = lambda placed: None

    # -- objects ---------------------------------------------------------------------------------

    @staticmethod
    def spawnables() -> list[dict[str, Any]]:
        """The catalogue: uri, description and size (m) of each kind."""
        return [{"uri": k.uri, "description": k.description, "size_m": list(k.size_m)} for k in CATALOGUE]

    def spawn(self, name: Any, uri: Any, position: Any, orientation: Any, allow_renaming: bool = False
              ) -> WorldObject:
        if not isinstance(uri, str) or kind_of(uri) is None:
            raise UnknownResource(f"no spawnable {uri!r}: the catalogue has "
                                  f"{', '.join(URI_PREFIX + k for k in KINDS)}")
        kind = kind_of(uri)
        assert kind is not None
        if not isinstance(name, str):
            raise NameInvalid(f"name must be a string, got {name!r}")
        if len(self.objects) >= MAX_OBJECTS:
            raise BadRequest(f"the world holds {MAX_OBJECTS} spawned objects already: delete some first")
        name = self._free_name(name or kind.name, allow_renaming or not name)
        x, y, z, yaw = self._placement(position, orientation)
        placed = WorldObject(name, kind, x, y, z, yaw)
        self.check_object(placed)
        self.objects[name] = placed
        self._rebuild()
        return placed

    def _free_name(self, name: str, renaming: bool) -> str:
        if not _NAME.fullmatch(name):
            raise NameInvalid(f"name {name!r} is not valid: a letter, then up to 63 letters, digits or '_'")
        taken = set(self.objects) | set(self.agents)
        if name not in taken:
            return name
        if not renaming:
            owner = "an agent" if name in self.agents else "an object"
            raise NameTaken(f"the name {name!r} is taken (by {owner})")
        number = 1
        while f"{name}_{number}" in taken:
            number += 1
        return f"{name}_{number}"

    def _placement(self, position: Any, orientation: Any) -> tuple[float, float, float, float]:
        """x, y, the ground's z there and the heading of a requested pose (InvalidPose if it cannot be)."""
        (x, y, z), quaternion = checked_pose(position, orientation, OBJECT_HALF_EXTENT_M)
        ground = float(self.base.ground_height(x, y))
        if z < ground - GROUND_TOLERANCE_M:
            raise InvalidPose(f"z {z:g} is under the terrain (the ground at ({x:g}, {y:g}) is "
                              f"{ground:.2f} m); "
                              "objects stand on the ground: give z 0 or the ground's height")
        if z > ground + GROUND_TOLERANCE_M:
            raise InvalidPose(f"z {z:g} is in the air (the ground at ({x:g}, {y:g}) is "
                              f"{ground:.2f} m); "
                              "objects stand on the ground: give z 0 or the ground's height")
        return x, y, ground, quaternion_yaw(quaternion)

    def move(self, name: str, position: Any, orientation: Any) -> WorldObject:
        placed = self.objects[name]
        x, y, z, yaw = self._placement(position, orientation)
        moved = dataclasses.replace(placed, x=x, y=y, z=z, yaw=yaw)
        self.check_object(moved)
        self.objects[name] = moved
        self._rebuild()
        return self.objects[name]

    def delete(self, name: Any) -> None:
        if name in self.agents:
            raise NotDeletable(f"{name!r} is an agent: agents come with the session and are not deleted")
        if name not in self.objects:
            raise UnknownEntity(f"no entity {name!r}; the objects are {', '.join(self.objects) or 'none'}")
        del self.objects[name]
        self._rebuild()

    def clear_objects(self) -> bool:
        """Every spawned object gone; whether there were any."""
        had = bool(self.objects)
        self.objects.clear()
        self._rebuild()
        return had

    def restore(self, objects: list[dict[str, Any]]) -> None:
        """The objects of a WorldObjects message (a replay): as logged."""
        self.objects.clear()
        for logged in objects:
            kind = kind_of(logged["uri"])
            if kind is None:
                raise UnknownResource(f"the log has an object of kind {logged['uri']!r} this world lacks")
            p, q = logged["pose"]["position"], logged["pose"]["orientation"]
            self.objects[logged["name"]] = WorldObject(logged["name"], kind, p["x"], p["y"], p["z"],
                                                       orientation_yaw(q))
        self._rebuild()

    def _rebuild(self) -> None:
        spawned = tuple(p for placed in self.objects.values() for p in placed.primitives())
        self.scene = (dataclasses.replace(self.base, primitives=self.base.primitives + spawned) if spawned
                      else self.base)

    # -- conditions and shifts -------------------------------------------------------------------

    def set_conditions(self, values: Any) -> Conditions:
        if not isinstance(values, dict):
            raise BadRequest(f"conditions must be an object of fields, got {values!r}")
        try:
            self.conditions = self.conditions.changed(values)
        except InvalidConditions as exc:
            raise OutOfRange(str(exc)) from None
        return self.conditions

    def set_shift(self, agent: Any, values: Any) -> VehicleShift:
        if agent not in self.shifts:
            raise UnknownEntity(f"no agent {agent!r}; the agents are {', '.join(self.agents)}")
        if not isinstance(values, dict):
            raise BadRequest(f"shift must be an object of fields, got {values!r}")
        self.shifts[agent] = VehicleShift.of(values)
        return self.shifts[agent]

    def as_launched(self) -> None:
        """A reset ALL: no objects, a clear day, every vehicle calibrated."""
        self.objects.clear()
        self.conditions = CLEAR_DAY
        self.shifts = dict.fromkeys(self.agents, CALIBRATED)
        self._rebuild()

    def apply_to(self, agents: Iterable[SessionAgent]) -> None:
        """(no render in flight) The agents' sensors and vehicles see the world as it now is."""
        for agent in agents:
            simulator = agent.simulator
            simulator.scene = self.scene
            simulator.conditions = self.conditions
            simulator.shift = self.shifts[agent.name]
            if agent.driving is not None:
                agent.driving.set_shift(simulator.shift)
            agent.renders.forget_cache()

    # -- as messages: to the listeners and the log, and back from a log ---------------------------

    def message(self, topic: Topic, header: dict[str, Any]) -> dict[str, Any]:
        """The WorldObjects, VehicleShifts or Conditions message of how the world is now."""
        if topic is OBJECTS:
            return {"header": dict(header, frame_id=WORLD_FRAME),
                    "objects": [o.message() for o in self.objects.values()]}
        if topic is SHIFTS:
            return {"header": header, "shifts": [self.shifts[a].message(a) for a in self.agents]}
        return self.conditions.message(header)

    def apply_logged(self, topic: Topic, message: dict[str, Any]) -> None:
        """A logged WorldObjects, VehicleShifts or Conditions message (a replay): the world as it says."""
        if topic is OBJECTS:
            self.restore(message["objects"])
        elif topic is SHIFTS:
            for shift in message["shifts"]:
                if shift["agent"] in self.shifts:
                    self.set_shift(shift["agent"], {k: v for k, v in shift.items() if k != "agent"})
        else:
            self.set_conditions({k: v for k, v in message.items() if k != "header"})
