"""A scenario file read and checked (ROS-free): YAML in, a Scenario out, or a ScenarioError that names
the file, the line and the key of the first thing wrong. Every check runs before anything starts:
the keys and their types, the vehicles and objects the world has, poses on the map and clear of each
other, conditions and shifts in range, events and criteria naming entities that exist then.

`--set key=value` overrides (overrides.py) are applied to the YAML before the checks, so an
override is checked like the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from acres_sim.bodies import clearance, object_body, vehicle_body
from acres_sim.channels.control import AGENT_HALF_EXTENT_M, OBJECT_HALF_EXTENT_M, Refusal
from acres_sim.scenario.criteria import CATALOGUE as CRITERIA
from acres_sim.scenario.errors import ScenarioError
from acres_sim.scenario.model import (
    DEFAULT_COMMAND_PERIOD_S,
    DEFAULT_STACK_TIMEOUT_S,
    DEFAULT_START_TIMEOUT_S,
    AgentEntry,
    CriterionEntry,
    Event,
    ObjectEntry,
    Pose2D,
    Scenario,
)
from acres_sim.scenario.overrides import apply_override
from acres_sim.scenario.yaml_nodes import NodeReader, compose

SCHEMA_VERSION = 1
PACES = ("lockstep", "real_time")
EVENT_KINDS = ("spawn", "delete", "move", "conditions", "shifts")
TOP_KEYS = ("acres_scenario", "name", "seed", "duration_s", "pace", "agents", "objects", "conditions",
            "shifts", "events", "criteria", "start_timeout_s", "stack_timeout_s", "command_period_s")


# -- reading --------------------------------------------------------------------------------------

def load(path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> Scenario:
    """The scenario of a file, with `--set key=value` overrides applied; ScenarioError otherwise."""
    path = Path(path)
    root = compose(path, "scenario")
    if not isinstance(root, yaml.MappingNode):
        raise ScenarioError(f"{path}:1", "", "a scenario is a mapping of keys (acres_scenario: 1, name: ...)")
    for override in overrides:
        apply_override(root, override)  # ScenarioError naming the --set
    return _Reader(str(path)).scenario(root)


class _Reader(NodeReader):
    """The scenario's keys, each checked as it is read (NodeReader: the typed values and where)."""

    def pose(self, node: yaml.Node, key: str, half_extent_m: float) -> Pose2D:
        fields = self.mapping(node, key, ("x", "y", "yaw_deg"), ("x", "y"))
        x = self.number(fields["x"], f"{key}.x", -half_extent_m, half_extent_m)
        y = self.number(fields["y"], f"{key}.y", -half_extent_m, half_extent_m)
        yaw = self.number(fields["yaw_deg"], f"{key}.yaw_deg", -360.0, 360.0) if "yaw_deg" in fields else 0.0
        return Pose2D(x, y, yaw)

    # -- the document --------------------------------------------------------------------------

    def scenario(self, root: yaml.MappingNode) -> Scenario:
        top = self.mapping(root, "", TOP_KEYS, ("acres_scenario", "name", "duration_s", "agents"))
        version = self.integer(top["acres_scenario"], "acres_scenario")
        if version != SCHEMA_VERSION:
            raise self.fail(top["acres_scenario"], "acres_scenario",
                            f"schema version {version}; this version of acres_sim reads {SCHEMA_VERSION}")
        pace = self.text(top["pace"], "pace") if "pace" in top else "lockstep"
        if pace not in PACES:
            raise self.fail(top["pace"], "pace", f"{pace!r} is not one of {', '.join(PACES)}")
        scenario = Scenario(
            path=self.path, name=self.text(top["name"], "name"),
            seed=self.integer(top["seed"], "seed") if "seed" in top else 42,
            duration_s=self.number(top["duration_s"], "duration_s", 0.01, 86400.0), pace=pace,
            agents=self.agents(top["agents"]),
            start_timeout_s=(self.number(top["start_timeout_s"], "start_timeout_s", 0.1, 3600.0)
                             if "start_timeout_s" in top else DEFAULT_START_TIMEOUT_S),
            stack_timeout_s=(self.number(top["stack_timeout_s"], "stack_timeout_s", 0.1, 3600.0)
                             if "stack_timeout_s" in top else DEFAULT_STACK_TIMEOUT_S),
            command_period_s=(self.number(top["command_period_s"], "command_period_s", 1.0 / 120.0, 10.0)
                              if "command_period_s" in top else DEFAULT_COMMAND_PERIOD_S))
        names = {a.name for a in scenario.agents}
        if "objects" in top:
            scenario.objects = self.objects(top["objects"], names)
        if "conditions" in top:
            scenario.conditions = self.conditions(top["conditions"], "conditions")
        if "shifts" in top:
            scenario.shifts = self.shifts(top["shifts"], "shifts", names)
        if "events" in top:
            scenario.events = self.events(top["events"], scenario)
        if "criteria" in top:
            scenario.criteria = self.criteria(top["criteria"], scenario)
        self.clear_of_each_other(scenario, top)
        return scenario

    def agents(self, node: yaml.Node) -> list[AgentEntry]:
        from acres_sim.fake_game.simulation.vehicle_model import VEHICLE_PARAMS

        if not isinstance(node, yaml.MappingNode) or not node.value:
            raise self.fail(node, "agents",
                            "must map each agent's name to {vehicle: ..., pose: {x: ..., y: ...}}")
        out = []
        for k, v in node.value:
            name = k.value
            key = f"agents.{name}"
            if not isinstance(name, str) or not name.isidentifier():
                raise self.fail(k, key, "an agent's name is a letter, then letters, digits or '_'")
            fields = self.mapping(v, key, ("vehicle", "pose", "waypoints",
                                  "speed_mps", "task", "cmd_vel_stamped"), ("vehicle", "pose"))
            vehicle = self.text(fields["vehicle"], f"{key}.vehicle")
            if vehicle not in VEHICLE_PARAMS:
                raise self.fail(fields["vehicle"], f"{key}.vehicle",
                                f"no vehicle {vehicle!r}: the world has {', '.join(VEHICLE_PARAMS)}")
            waypoints: tuple[tuple[float, float], ...] = ()
            if "waypoints" in fields:
                points = []
                for i, item in enumerate(self.sequence(fields["waypoints"], f"{key}.waypoints")):
                    pair = self.sequence(item, f"{key}.waypoints.{i}")
                    if len(pair) != 2:
                        raise self.fail(item, f"{key}.waypoints.{i}", "a waypoint is [x, y]")
                    points.append((self.number(pair[0], f"{key}.waypoints.{i}", -AGENT_HALF_EXTENT_M,
                                               AGENT_HALF_EXTENT_M),
                                   self.number(pair[1], f"{key}.waypoints.{i}", -AGENT_HALF_EXTENT_M,
                                               AGENT_HALF_EXTENT_M)))
                if not points:
                    raise self.fail(fields["waypoints"], f"{key}.waypoints", "give at least one [x, y]")
                waypoints = tuple(points)
            speed = 0.0
            if "speed_mps" in fields:
                speed = self.number(fields["speed_mps"], f"{key}.speed_mps", 0.0,
                                    VEHICLE_PARAMS[vehicle].max_speed_mps)
            if waypoints and speed <= 0.0:
                raise self.fail(v, f"{key}.speed_mps", "a scripted agent (waypoints) needs a speed above 0")
            task = self.text(fields["task"], f"{key}.task") if "task" in fields else ""
            stamped = False
            if "cmd_vel_stamped" in fields:
                stamped = self.scalar(fields["cmd_vel_stamped"], f"{key}.cmd_vel_stamped")
                if not isinstance(stamped, bool):
                    raise self.fail(fields["cmd_vel_stamped"], f"{key}.cmd_vel_stamped",
                                    f"must be true or false, got {stamped!r}")
            pose = self.pose(fields["pose"], f"{key}.pose", AGENT_HALF_EXTENT_M)
            out.append(AgentEntry(name, vehicle, pose, waypoints, speed, task, stamped))
        return out

    def object(self, node: yaml.Node, key: str, taken: set[str]) -> ObjectEntry:
        from acres_sim.fake_game.world.farm_objects import URI_PREFIX, KINDS, kind_of

        fields = self.mapping(node, key, ("name", "uri", "pose"), ("name", "uri", "pose"))
        name = self.text(fields["name"], f"{key}.name")
        if not name.isidentifier():
            raise self.fail(fields["name"], f"{key}.name",
                            "an entity's name is a letter, then letters, digits or '_'")
        if name in taken:
            raise self.fail(fields["name"], f"{key}.name", f"the name {name!r} is taken")
        uri = self.text(fields["uri"], f"{key}.uri")
        if kind_of(uri) is None:
            raise self.fail(fields["uri"], f"{key}.uri",
                            f"no object {uri!r}: the catalogue has "
                            f"{', '.join(URI_PREFIX + k for k in KINDS)}")
        return ObjectEntry(name, uri, self.pose(fields["pose"], f"{key}.pose", OBJECT_HALF_EXTENT_M))

    def objects(self, node: yaml.Node, agents: set[str]) -> list[ObjectEntry]:
        out: list[ObjectEntry] = []
        for i, item in enumerate(self.sequence(node, "objects")):
            out.append(self.object(item, f"objects.{i}", agents | {o.name for o in out}))
        return out

    def conditions(self, node: yaml.Node, key: str) -> dict[str, float]:
        from acres_sim.fake_game.world.conditions import CLEAR_DAY, RANGES, InvalidConditions

        fields = self.mapping(node, key, tuple(RANGES))
        values = {}
        for name, value in fields.items():
            values[name] = self.number(value, f"{key}.{name}")
            try:
                CLEAR_DAY.changed({name: values[name]})
            except InvalidConditions as exc:
                raise self.fail(value, f"{key}.{name}", str(exc)) from None
        return values

    def shifts(self, node: yaml.Node, key: str, agents: set[str]) -> dict[str, dict[str, Any]]:
        from acres_sim.fake_game.simulation.shifts import VehicleShift

        if not isinstance(node, yaml.MappingNode):
            raise self.fail(node, key, "must map agents to their shift")
        out = {}
        for k, v in node.value:
            agent = k.value
            if agent not in agents:
                raise self.fail(k, f"{key}.{agent}",
                                f"no agent {agent!r} (the agents: {', '.join(sorted(agents))})")
            values = yaml.safe_load(yaml.serialize(v))
            if not isinstance(values, dict):
                raise self.fail(v, f"{key}.{agent}", "must be a mapping of the shift's fields")
            # {z: 1.0} for a vector: the fields not given are 0
            values = {f: ([float(vec.get(c, 0.0)) for c in "xyz"] if isinstance(vec, dict) else vec)
                      for f, vec in values.items()}
            try:
                VehicleShift.of(values)
            except (ValueError, TypeError, Refusal) as exc:
                raise self.fail(v, f"{key}.{agent}", str(exc)) from None
            out[agent] = values
        return out

    def events(self, node: yaml.Node, scenario: Scenario) -> list[Event]:
        out: list[Event] = []
        agents = {a.name for a in scenario.agents}
        present = {o.name for o in scenario.objects}
        last_at = 0.0
        for i, item in enumerate(self.sequence(node, "events")):
            key = f"events.{i}"
            fields = self.mapping(item, key, ("at_s", *EVENT_KINDS), ("at_s",))
            at_s = self.number(fields["at_s"], f"{key}.at_s", 0.0, scenario.duration_s)
            if at_s < last_at:
                raise self.fail(fields["at_s"], f"{key}.at_s",
                                f"events are in time order ({at_s:g} after {last_at:g})")
            last_at = at_s
            kinds = [k for k in EVENT_KINDS if k in fields]
            if len(kinds) != 1:
                raise self.fail(item, key, f"give one of {', '.join(EVENT_KINDS)} besides at_s")
            kind = kinds[0]
            value, vkey = fields[kind], f"{key}.{kind}"
            if kind == "spawn":
                placed = self.object(value, vkey, agents | present)
                present.add(placed.name)
                body: dict[str, Any] = {"name": placed.name, "uri": placed.uri, "pose": placed.pose}
            elif kind in ("delete", "move"):
                if kind == "delete":
                    name = self.text(value, vkey)
                    pose = None
                else:
                    mv = self.mapping(value, vkey, ("name", "pose"), ("name", "pose"))
                    name = self.text(mv["name"], f"{vkey}.name")
                    pose = self.pose(mv["pose"], f"{vkey}.pose", OBJECT_HALF_EXTENT_M)
                if name not in present:
                    raise self.fail(value, vkey, f"no object {name!r} at {at_s:g} s "
                                    f"(the objects then: {', '.join(sorted(present)) or 'none'})")
                if kind == "delete":
                    present.discard(name)
                body = {"name": name} if pose is None else {"name": name, "pose": pose}
            elif kind == "conditions":
                body = self.conditions(value, vkey)
            else:
                body = self.shifts(value, vkey, agents)
            out.append(Event(at_s, kind, body))
        return out

    def criteria(self, node: yaml.Node, scenario: Scenario) -> list[CriterionEntry]:
        agents = {a.name for a in scenario.agents}
        entities = agents | {o.name for o in scenario.objects} | {
            e.body["name"] for e in scenario.events if e.kind == "spawn"}
        out = []
        for i, item in enumerate(self.sequence(node, "criteria")):
            key = f"criteria.{i}"
            if not isinstance(item, yaml.MappingNode) or len(item.value) != 1:
                raise self.fail(item, key,
                                f"a criterion is one of {', '.join(CRITERIA)}: {{agent: ..., ...}}")
            kind_node, params_node = item.value[0]
            kind = kind_node.value
            if kind not in CRITERIA:
                raise self.fail(kind_node, f"{key}.{kind}", f"no criterion {kind!r}: the catalogue has "
                                f"{', '.join(CRITERIA)}")
            spec = CRITERIA[kind]
            ckey = f"{key}.{kind}"
            fields = self.mapping(params_node, ckey, tuple(spec.params), tuple(spec.required))
            params: dict[str, Any] = {}
            for name, value in fields.items():
                kind_of_param = spec.params[name]
                pkey = f"{ckey}.{name}"
                if kind_of_param == "agent":
                    params[name] = self.text(value, pkey)
                    if params[name] not in agents:
                        raise self.fail(value, pkey, f"no agent {params[name]!r} "
                                        f"(the agents: {', '.join(sorted(agents))})")
                elif kind_of_param == "entity":
                    params[name] = self.text(value, pkey)
                    if params[name] not in entities:
                        raise self.fail(value, pkey, f"no entity {params[name]!r} in the scenario "
                                        f"(the entities: {', '.join(sorted(entities))})")
                elif kind_of_param == "entities":
                    names = [self.text(v, f"{pkey}.{j}") for j, v in enumerate(self.sequence(value, pkey))]
                    unknown = [n for n in names if n not in entities]
                    if unknown:
                        raise self.fail(value, pkey, f"no entity {', '.join(unknown)} in the scenario "
                                        f"(the entities: {', '.join(sorted(entities))})")
                    params[name] = names
                elif kind_of_param == "time":
                    params[name] = self.number(value, pkey, 0.0, scenario.duration_s)
                else:  # "length", "speed", "area", "coordinate": a number >= 0 (coordinates any)
                    low = -OBJECT_HALF_EXTENT_M if kind_of_param == "coordinate" else 0.0
                    params[name] = self.number(value, pkey, low)
            out.append(CriterionEntry(kind, params, self.where(kind_node)))
        return out

    def clear_of_each_other(self, scenario: Scenario, top: dict[str, yaml.Node]) -> None:
        """No agent's start overlaps an object or another agent (the game would refuse it)."""
        from acres_sim.fake_game.simulation.vehicle_model import VEHICLE_PARAMS
        from acres_sim.fake_game.world.farm_objects import kind_of

        bodies = []
        for a in scenario.agents:
            p = VEHICLE_PARAMS[a.vehicle]
            bodies.append((f"agents.{a.name}.pose", vehicle_body(a.name, a.pose.x, a.pose.y, a.pose.yaw, 0.0,
                                                                 p.length_m, p.width_m, p.height_m,
                                                                 p.rear_overhang_m)))
        for i, o in enumerate(scenario.objects):
            kind = kind_of(o.uri)
            assert kind is not None
            shape = "box" if kind.shape == "box" else "cylinder"
            bodies.append((f"objects.{i}.pose",
                           object_body(o.name, shape, kind.size_m, o.pose.x, o.pose.y, 0.0, o.pose.yaw)))
        poses = {k.value: v for k, v in top["agents"].value}
        for i, agent in enumerate(scenario.agents):
            for j in range(i + 1, len(bodies)):
                if clearance(bodies[i][1], bodies[j][1]) <= 0.0:
                    raise self.fail(poses[agent.name], bodies[i][0], f"{agent.name} starts overlapping "
                                    f"{bodies[j][1].name}: place it clear")
