"""sim_control's simulation_interfaces services: each handler is named after the service it answers
(SimulationServices.step_simulation serves step_simulation), and every one of them speaks to the game
only through the control client and the lockstep rules (acres_sim.control.lockstep).

Handlers raise OperationFailed or Unsupported, or set a service's own result code; sim_control turns
every exception into a result, so nothing a client sends takes the node down.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from geometry_msgs.msg import Vector3
from simulation_interfaces import srv
from simulation_interfaces.msg import (
    Bounds,
    EntityState,
    Result,
    SimulationState,
    SimulatorFeatures,
    Spawnable,
)

from acres_sim.channels.control import (
    INCORRECT_STATE,
    INVALID_POSE,
    NAME_INVALID,
    NAME_TAKEN,
    NO_RESOURCE,
    EntityState as GameEntityState,
)
from acres_sim.control.lockstep import Lockstep, LockstepFailed
from acres_sim.convert.stamps import stamp_to_sec_nanosec
from acres_sim.game.control_client import ControlClient, ControlRefused, ControlUnavailable
from acres_sim.nodes.parameters import SERVICE_CHUNK_STEPS
from acres_sim.stream.timing import PHYSICS_HZ

RESET_SCOPES = {
    srv.ResetSimulation.Request.SCOPE_DEFAULT: "all",
    srv.ResetSimulation.Request.SCOPE_ALL: "all",
    srv.ResetSimulation.Request.SCOPE_TIME: "time",
    srv.ResetSimulation.Request.SCOPE_STATE: "state",
    srv.ResetSimulation.Request.SCOPE_SPAWNED: "spawned",
    srv.ResetSimulation.Request.SCOPE_TIME | srv.ResetSimulation.Request.SCOPE_STATE: "all",
}
# The game's refusals of a spawn request, as SpawnEntity's result codes
SPAWN_CODES = {
    NAME_TAKEN: srv.SpawnEntity.Response.NAME_NOT_UNIQUE,
    NAME_INVALID: srv.SpawnEntity.Response.NAME_INVALID,
    NO_RESOURCE: srv.SpawnEntity.Response.NO_RESOURCE,
    INVALID_POSE: srv.SpawnEntity.Response.INVALID_POSE,
}
FEATURES = (
    SimulatorFeatures.SPAWNING,
    SimulatorFeatures.DELETING,
    SimulatorFeatures.SPAWNABLES,
    SimulatorFeatures.SIMULATION_RESET_SPAWNED,
    SimulatorFeatures.ENTITY_STATE_GETTING,
    SimulatorFeatures.ENTITY_STATE_SETTING,
    SimulatorFeatures.SIMULATION_RESET,
    SimulatorFeatures.SIMULATION_RESET_TIME,
    SimulatorFeatures.SIMULATION_RESET_STATE,
    SimulatorFeatures.SIMULATION_STATE_GETTING,
    SimulatorFeatures.SIMULATION_STATE_SETTING,
    SimulatorFeatures.SIMULATION_STATE_PAUSE,
    SimulatorFeatures.STEP_SIMULATION_SINGLE,
    SimulatorFeatures.STEP_SIMULATION_MULTIPLE,
    SimulatorFeatures.STEP_SIMULATION_ACTION,
)
# Served so that a client asking gets a clear FEATURE_UNSUPPORTED rather than no service at all.
UNSUPPORTED = {
    "spawn_entities": (srv.SpawnEntities, "spawning several entities in one call (call spawn_entity)"),
    "get_entity_info": (srv.GetEntityInfo, "entity info (categories, tags)"),
    "set_entity_info": (srv.SetEntityInfo, "entity info (categories, tags)"),
    "get_entity_bounds": (srv.GetEntityBounds, "entity bounds"),
    "get_named_poses": (srv.GetNamedPoses, "named poses"),
    "get_named_pose_bounds": (srv.GetNamedPoseBounds, "named poses"),
    "load_world": (srv.LoadWorld, "world loading"),
    "unload_world": (srv.UnloadWorld, "world unloading"),
    "get_current_world": (srv.GetCurrentWorld, "world info"),
    "get_available_worlds": (srv.GetAvailableWorlds, "world listing"),
}


class OperationFailed(Exception):
    """A request that could not be done: the message says why (for result.error_message)."""


class Unsupported(Exception):
    """A request for a feature the simulator does not offer (FEATURE_UNSUPPORTED)."""


# The services served, each by the handler of its name.
SERVED = {
    "get_simulator_features": srv.GetSimulatorFeatures,
    "get_simulation_state": srv.GetSimulationState,
    "set_simulation_state": srv.SetSimulationState,
    "step_simulation": srv.StepSimulation,
    "reset_simulation": srv.ResetSimulation,
    "get_entities": srv.GetEntities,
    "get_entities_states": srv.GetEntitiesStates,
    "get_entity_state": srv.GetEntityState,
    "set_entity_state": srv.SetEntityState,
    "get_spawnables": srv.GetSpawnables,
    "spawn_entity": srv.SpawnEntity,
    "delete_entity": srv.DeleteEntity,
}


class SimulationServices:
    def __init__(self, game: ControlClient, lockstep: Lockstep, world_frame: str, clock_entity: str,
                 states_delivered: Callable[[int, float], bool] | None = None,
                 forget_steps: Callable[[], None] | None = None):
        self.game = game
        self.lockstep = lockstep
        self.world_frame = world_frame
        self.clock_entity = clock_entity  # the entity whose state tells the world time
        self._delivered = states_delivered  # with the episode feed: a step waits for its states
        self._forget = forget_steps

    def handler(self, service: str) -> Callable[[Any, Any], None]:
        """The handler of a service: the one of its name, or FEATURE_UNSUPPORTED with what it is."""
        if service in UNSUPPORTED:
            what = UNSUPPORTED[service][1]

            def unsupported(request: Any, response: Any) -> None:
                raise Unsupported(f"the simulator does not support {what} (see get_simulator_features)")
            return unsupported
        return getattr(self, service)

    def steps(self, steps: int, chunk: int, after_chunk: Callable[[int], bool] | None = None) -> int:
        """Step the game in lockstep (control/lockstep.py); the steps done."""
        try:
            return self.lockstep.steps(steps, chunk, self._step_game,
                                       lambda: self.game.get_state(self.clock_entity).time_s,
                                       after_chunk, self._delivered)
        except LockstepFailed as exc:
            raise OperationFailed(str(exc)) from None

    def _step_game(self, steps: int) -> tuple[int, float]:
        try:
            reached = self.game.step(steps, paused_only=True)
        except ControlRefused as exc:
            if exc.code == INCORRECT_STATE:
                raise OperationFailed(f"the simulation is not paused: pause it first ({exc})") from None
            raise
        return reached.step, reached.time_s

    def _forget_steps(self) -> None:
        if self._forget is not None:
            self._forget()

    def get_simulator_features(self, request: Any, response: Any) -> None:
        response.features.features = list(FEATURES)
        response.features.custom_info = (
            "acres_sim sim_control on the ACRES control channel: entities are the agents; entity "
            f"state is base_footprint in '{self.world_frame}'; steps of 1/{PHYSICS_HZ} s answer after "
            "every agent's sim/barrier")

    def get_simulation_state(self, request: Any, response: Any) -> None:
        try:
            paused = self.game.paused()
        except ControlUnavailable:
            response.state.state = SimulationState.STATE_NO_WORLD
            raise
        response.state.state = SimulationState.STATE_PAUSED if paused else SimulationState.STATE_PLAYING
        response.result.result = Result.RESULT_OK

    def set_simulation_state(self, request: Any, response: Any) -> None:
        target = request.state.state
        if target not in (SimulationState.STATE_PLAYING, SimulationState.STATE_PAUSED):
            fail_with(response, srv.SetSimulationState.Response.INCORRECT_TRANSITION,
                      f"cannot go to state {target}: the simulator can be PLAYING "
                      f"({SimulationState.STATE_PLAYING}) or PAUSED ({SimulationState.STATE_PAUSED})")
            return
        playing = target == SimulationState.STATE_PLAYING
        if self.game.paused() != playing:
            fail_with(response, srv.SetSimulationState.Response.ALREADY_IN_TARGET_STATE,
                      f"the simulation is already {'playing' if playing else 'paused'}")
            return
        with self.lockstep.lock:  # not in the middle of a stepping request
            self.lockstep.world_time_s = None
            if playing:
                self.game.play()
            else:
                self.game.pause()
        response.result.result = Result.RESULT_OK

    def step_simulation(self, request: Any, response: Any) -> None:
        if request.steps < 1:
            fail_with(response, Result.RESULT_OPERATION_FAILED, "steps must be at least 1")
            return
        self.steps(request.steps, SERVICE_CHUNK_STEPS)
        response.result.result = Result.RESULT_OK

    def reset_simulation(self, request: Any, response: Any) -> None:
        scope = RESET_SCOPES.get(request.scope)
        if scope is None:
            raise Unsupported(f"reset scope {request.scope} is not supported: TIME (1), STATE (2), both, "
                              "SPAWNED (4), DEFAULT (0) or ALL (255)")
        try:
            self.lockstep.reset(scope, lambda: self.game.reset(scope).step, self._forget_steps)
        except LockstepFailed as exc:
            raise OperationFailed(str(exc)) from None
        response.result.result = Result.RESULT_OK

    def _matching(self, filters: Any) -> list[str]:
        if filters.categories:
            raise Unsupported("filtering by entity category is not supported")
        if filters.tags.tags:
            raise Unsupported("filtering by entity tags is not supported")
        if filters.bounds.type != 0 or filters.bounds.points:
            raise Unsupported("filtering by bounds is not supported")
        try:
            pattern = re.compile(filters.filter) if filters.filter else None
        except re.error as exc:
            raise OperationFailed(f"filter {filters.filter!r} is not a valid regular expression: {exc}") \
                from None
        return [name for name in self.game.entities() if pattern is None or pattern.search(name)]

    def get_entities(self, request: Any, response: Any) -> None:
        response.entities = self._matching(request.filters)
        response.result.result = Result.RESULT_OK

    def get_entities_states(self, request: Any, response: Any) -> None:
        names = self._matching(request.filters)
        response.entities = names
        response.states = [_entity_state_msg(self.world_frame, self.game.get_state(name)) for name in names]
        response.result.result = Result.RESULT_OK

    def get_entity_state(self, request: Any, response: Any) -> None:
        response.state = _entity_state_msg(self.world_frame, self.game.get_state(request.entity))
        response.result.result = Result.RESULT_OK

    def set_entity_state(self, request: Any, response: Any) -> None:
        state = request.state
        if state.header.frame_id not in ("", self.world_frame):
            fail_with(response, Result.RESULT_OPERATION_FAILED,
                      f"state.header.frame_id must be '{self.world_frame}' (or empty), got "
                      f"'{state.header.frame_id}'")
            return
        p, q = state.pose.position, state.pose.orientation
        v, w = state.twist.linear, state.twist.angular
        try:
            with self.lockstep.lock:
                self.lockstep.world_time_s = None
                self.game.set_state(request.entity, (p.x, p.y, p.z), (q.x, q.y, q.z, q.w),
                                    (v.x, v.y, v.z), (w.x, w.y, w.z))
        except ControlRefused as exc:
            if exc.code != INVALID_POSE:
                raise
            fail_with(response, srv.SetEntityState.Response.INVALID_POSE, str(exc))
            return
        response.result.result = Result.RESULT_OK

    def get_spawnables(self, request: Any, response: Any) -> None:
        unknown = [s for s in request.sources if s not in ("", "acres")]
        if unknown:
            raise OperationFailed(f"no source {', '.join(unknown)}: the one source is the fake world's "
                                  "catalogue (sources empty or 'acres')")
        for kind in self.game.spawnables():
            spawnable = Spawnable(uri=kind["uri"], description=kind["description"])
            sx, sy, sz = (float(v) for v in kind["size_m"])
            # its box in its own frame (the origin: the middle of its footprint on the ground)
            spawnable.spawn_bounds.type = Bounds.TYPE_BOX
            spawnable.spawn_bounds.points = [Vector3(x=-sx / 2, y=-sy / 2, z=0.0),
                                             Vector3(x=sx / 2, y=sy / 2, z=sz)]
            response.spawnables.append(spawnable)
        response.result.result = Result.RESULT_OK

    def spawn_entity(self, request: Any, response: Any) -> None:
        pose = request.initial_pose
        if pose.header.frame_id not in ("", self.world_frame):
            fail_with(response, srv.SpawnEntity.Response.INVALID_POSE,
                      f"initial_pose.header.frame_id must be '{self.world_frame}' (or empty), got "
                      f"'{pose.header.frame_id}'")
            return
        if request.resource_string:
            fail_with(response, srv.SpawnEntity.Response.UNSUPPORTED_FORMAT,
                      "resource_string is not supported: name a catalogue entry in uri (get_spawnables)")
            return
        p, q = pose.pose.position, pose.pose.orientation
        try:
            state = self.game.spawn(request.name, request.uri, (p.x, p.y, p.z), (q.x, q.y, q.z, q.w),
                                    request.allow_renaming)
        except ControlRefused as exc:
            code = SPAWN_CODES.get(exc.code)
            if code is None:
                raise
            fail_with(response, code, str(exc))
            return
        response.entity_name = state.name
        response.result.result = Result.RESULT_OK

    def delete_entity(self, request: Any, response: Any) -> None:
        self.game.delete(request.entity)
        response.result.result = Result.RESULT_OK


def _entity_state_msg(world_frame: str, state: GameEntityState) -> EntityState:
    msg = EntityState()
    msg.header.frame_id = world_frame
    # the same conversion as the bridge's headers: the state's stamp equals theirs to the nanosecond
    msg.header.stamp.sec, msg.header.stamp.nanosec = stamp_to_sec_nanosec(state.time_s)
    pose, twist = msg.pose, msg.twist
    pose.position.x, pose.position.y, pose.position.z = state.position
    pose.orientation.x, pose.orientation.y, pose.orientation.z, pose.orientation.w = state.orientation
    twist.linear.x, twist.linear.y, twist.linear.z = state.linear_velocity
    twist.angular.x, twist.angular.y, twist.angular.z = state.angular_velocity
    accel = msg.acceleration.linear
    accel.x, accel.y, accel.z = state.linear_acceleration
    return msg


def fail_with(response: Any, code: int, message: str) -> None:
    response.result.result = code
    response.result.error_message = message
