"""sim_control: the simulator's control channel as the ROS 2 standard simulation_interfaces services.

One node per session (not per agent). It speaks to the game only through acres_sim.game.control_client,
and listens to every agent's `/<agent>/sim/barrier` so that a step answers only once each agent's
bridge published that step's barrier: every message of the step was then acknowledged by the
reliable subscribers of every topic (the bridge's guarantee), so a learner that gets the answer
already holds the step's data.

With vehicle_bridges, the same for each agent's `/<agent>/vehicle/barrier` (the vehicle reports),
and the lockstep rule for commands: before the game steps, each agent under command must hold a
command stamped at or after the world time (its vehicle/held_command says), so a learner that
publishes a command and then calls step_simulation gets it applied from the first step. After
command_wait_s the step goes on with what the vehicle holds, and a WARN.

Threads: the services and the action run on a MultiThreadedExecutor and may block (a step waits for
the game and then for the barriers). The barrier subscriptions live on a hidden helper node spun by
an executor of its own, so that no number of blocked calls can starve them.
"""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Callable
from typing import Any

from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import Executor, MultiThreadedExecutor, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from simulation_interfaces import srv
from simulation_interfaces.action import SimulateSteps
from geometry_msgs.msg import Vector3
from simulation_interfaces.msg import (
    Bounds,
    EntityState,
    Result,
    SimulationState,
    SimulatorFeatures,
    Spawnable,
)
from std_msgs.msg import Header, UInt64

from acres_sim import topics
from acres_sim.control.lockstep import BarrierWatch, HeldCommands, PublishersMatched
from acres_sim.convert.stamps import stamp_to_sec_nanosec
from acres_sim.game.control_client import AgentState, ControlClient, ControlRefused, ControlUnavailable
from acres_sim.nodes.episode_services import IMPORT_ERROR, EpisodeServices
from acres_sim.nodes.parameters import SERVICE_CHUNK_STEPS, SIM_CONTROL, sim_control_config
from acres_sim.nodes.runner import RunnableNode, run
from acres_sim.stream.timing import PHYSICS_HZ

BARRIER_QOS = QoSProfile(depth=10, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE)
HELD_QOS = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.TRANSIENT_LOCAL)
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
    "name_taken": srv.SpawnEntity.Response.NAME_NOT_UNIQUE,
    "name_invalid": srv.SpawnEntity.Response.NAME_INVALID,
    "no_resource": srv.SpawnEntity.Response.NO_RESOURCE,
    "invalid_pose": srv.SpawnEntity.Response.INVALID_POSE,
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


class SimControl(RunnableNode):
    def __init__(self, **kwargs: Any):
        super().__init__("sim_control", **kwargs)
        config = sim_control_config(self.declare_table(SIM_CONTROL))
        self.barrier_timeout_s = config.barrier_timeout_s
        self.feedback_steps = config.feedback_steps
        self.world_frame = config.world_frame
        self.agents = agents = list(config.agents)
        self.game = ControlClient(config.control_port, timeout_s=config.request_timeout_s)
        self.barriers = BarrierWatch(agents)
        self.vehicle_bridges = config.vehicle_bridges
        self.command_wait_s = config.command_wait_s
        self.vehicle_barriers = BarrierWatch(agents if config.vehicle_bridges else [])
        self.held = HeldCommands(agents if config.vehicle_bridges else [])
        self._world_time: float | None = None  # known after a step; None: ask the game
        self._step_lock = threading.Lock()  # one stepping request at a time: barriers per request

        # Barriers on a hidden node of their own (see the module's docstring).
        self._barrier_node = Node("_sim_control_barriers", namespace=self.get_namespace(),
                                  context=self.context)
        counts: dict[str, Callable[[], int]] = {}  # each barrier topic's publishers
        for agent in agents:
            sub = self._barrier_node.create_subscription(
                UInt64, f"/{agent}/{topics.SIM_BARRIER}",
                lambda msg, agent=agent: self.barriers.arrived(agent, msg.data), BARRIER_QOS)
            counts[sub.topic_name] = sub.get_publisher_count
            if config.vehicle_bridges:
                sub = self._barrier_node.create_subscription(
                    UInt64, f"/{agent}/{topics.VEHICLE_BARRIER}",
                    lambda msg, agent=agent: self.vehicle_barriers.arrived(agent, msg.data), BARRIER_QOS)
                counts[sub.topic_name] = sub.get_publisher_count
                self._barrier_node.create_subscription(
                    Header, f"/{agent}/{topics.VEHICLE_HELD_COMMAND}",
                    lambda msg, agent=agent: self.held.update(
                        agent, msg.stamp.sec + msg.stamp.nanosec * 1e-9, msg.frame_id), HELD_QOS)
        self.matched = PublishersMatched(counts)

        group = ReentrantCallbackGroup()
        serve: dict[str, tuple[Any, Callable[[Any, Any], Any]]] = {
            "get_simulator_features": (srv.GetSimulatorFeatures, self._features),
            "get_simulation_state": (srv.GetSimulationState, self._get_simulation_state),
            "set_simulation_state": (srv.SetSimulationState, self._set_simulation_state),
            "step_simulation": (srv.StepSimulation, self._step_simulation),
            "reset_simulation": (srv.ResetSimulation, self._reset_simulation),
            "get_entities": (srv.GetEntities, self._get_entities),
            "get_entities_states": (srv.GetEntitiesStates, self._get_entities_states),
            "get_entity_state": (srv.GetEntityState, self._get_entity_state),
            "set_entity_state": (srv.SetEntityState, self._set_entity_state),
            "get_spawnables": (srv.GetSpawnables, self._get_spawnables),
            "spawn_entity": (srv.SpawnEntity, self._spawn_entity),
            "delete_entity": (srv.DeleteEntity, self._delete_entity),
        }
        for name, (kind, what) in UNSUPPORTED.items():
            serve[name] = (kind, self._unsupported(what))
        for name, (kind, handler) in serve.items():
            self.create_service(kind, name, self._guarded(handler), callback_group=group)
        self.episode: EpisodeServices | None = None
        if IMPORT_ERROR is None:
            self.episode = EpisodeServices(self, self.game, config.control_port, group)
            if config.episode_log or config.episode_replay:
                threading.Thread(target=self._open_episode_files, name="episode-files", daemon=True,
                                 args=(config.episode_replay, config.episode_log)).start()
        else:
            self.get_logger().warning(
                f"acres_interfaces does not import ({IMPORT_ERROR}): no /sim/episode, /sim/agents, "
                "/sim/agent_states and no episode log services (build acres_interfaces: see the README)")
        self._action = ActionServer(
            self, SimulateSteps, "simulate_steps", execute_callback=self._simulate_steps,
            goal_callback=lambda goal: GoalResponse.ACCEPT,
            cancel_callback=lambda goal_handle: CancelResponse.ACCEPT, callback_group=group)
        self.get_logger().info(
            f"control channel {self.game.address}; agents {', '.join(agents)}; services under "
            f"{self.get_namespace()}; a step answers after every agent's sim/barrier"
            f"{' and vehicle/barrier' if self.vehicle_bridges else ''} "
            f"(at most {self.barrier_timeout_s:g} s)")

    def executors(self) -> list[Executor]:
        """The barriers on an executor of their own; the services and the action, which may block,
        on four threads."""
        barriers = SingleThreadedExecutor()
        barriers.add_node(self._barrier_node)
        services = MultiThreadedExecutor(num_threads=4)
        services.add_node(self)
        return [barriers, services]

    def destroy_node(self) -> None:
        if self.episode is not None:
            self.episode.destroy()
        self._action.destroy()
        self._barrier_node.destroy_node()
        self.game.close()
        super().destroy_node()

    # -- helpers ---------------------------------------------------------------------------------

    def _guarded(self, handler: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
        """Every answer carries a result: the channel's errors become OPERATION_FAILED (or the code
        the handler picked), and nothing a client sends takes the node down."""
        def call(request: Any, response: Any) -> Any:
            try:
                handler(request, response)
            except ControlUnavailable as exc:
                _fail(response, Result.RESULT_OPERATION_FAILED, f"the simulator is not reachable: {exc}")
            except ControlRefused as exc:
                code = Result.RESULT_NOT_FOUND if exc.code == "not_found" else Result.RESULT_OPERATION_FAILED
                _fail(response, code, str(exc))
            except OperationFailed as exc:
                _fail(response, Result.RESULT_OPERATION_FAILED, str(exc))
            except Unsupported as exc:
                _fail(response, Result.RESULT_FEATURE_UNSUPPORTED, str(exc))
            except Exception as exc:  # noqa: BLE001 -- answer and keep serving
                self.get_logger().error(f"{handler.__name__}: {type(exc).__name__}: {exc}")
                _fail(response, Result.RESULT_OPERATION_FAILED, f"{type(exc).__name__}: {exc}")
            return response
        return call

    @staticmethod
    def _unsupported(what: str) -> Callable[[Any, Any], None]:
        def answer(request: Any, response: Any) -> None:
            raise Unsupported(f"the simulator does not support {what} (see get_simulator_features)")
        return answer

    def _steps(self, steps: int, chunk: int, after_chunk: Callable[[int], bool] | None = None) -> int:
        """Run `steps` in game requests of at most `chunk`, each waited for until every agent's
        barrier arrived. after_chunk(done) -> False stops between chunks. Returns the steps done."""
        done = 0
        with self._step_lock:
            self._wait_publishers(self.matched.topics)
            self._wait_commands()
            while done < steps:
                n = min(chunk, steps - done)
                since, vehicle_since = self.barriers.mark(), self.vehicle_barriers.mark()
                try:
                    reached = self.game.step(n, paused_only=True)
                except ControlRefused as exc:
                    if exc.code == "incorrect_state":
                        raise OperationFailed(f"the simulation is not paused: pause it first ({exc})") \
                            from None
                    raise
                self._world_time = reached.time_s
                done += n
                self._wait_barriers(reached.step, since, vehicle_since,
                                    f"the game did {done} of {steps} steps (world step {reached.step})")
                if self.episode is not None and not self.episode.states_delivered(
                        reached.step, self.barrier_timeout_s):
                    raise OperationFailed(
                        f"the game did {done} of {steps} steps (world step {reached.step}), but its agent "
                        f"states were not published within {self.barrier_timeout_s:g} s (is the episode "
                        "feed of the control channel connected?)")
                if after_chunk is not None and not after_chunk(done):
                    break
        return done

    def _wait_publishers(self, barriers: list[str]) -> None:
        """Each barrier the request waits for has a publisher matched (see PublishersMatched)."""
        missing = self.matched.wait(barriers, self.barrier_timeout_s)
        if missing:
            raise OperationFailed(
                f"nothing publishes {', '.join(missing)} (waited {self.barrier_timeout_s:g} s): is each "
                "agent's sim_bridge (and vehicle_bridge) running?")

    def _wait_barriers(self, step: int, since: int, vehicle_since: int, what: str) -> None:
        missing = self.barriers.wait(step, since, self.barrier_timeout_s)
        if missing:
            raise OperationFailed(
                f"{what}, but no sim/barrier came within {self.barrier_timeout_s:g} s from: "
                f"{', '.join(missing)} (is its sim_bridge running and connected?)")
        missing = self.vehicle_barriers.wait(step, vehicle_since, self.barrier_timeout_s)
        if missing:
            raise OperationFailed(
                f"{what}, but no vehicle/barrier came within {self.barrier_timeout_s:g} s from: "
                f"{', '.join(missing)} (is its vehicle_bridge running and connected?)")

    def _wait_commands(self) -> None:
        """The lockstep rule: each agent under command holds a command stamped at or after the
        world time before the game steps (bounded by command_wait_s)."""
        if not self.vehicle_bridges or not self.held.under_command():
            return
        if self._world_time is None:
            self._world_time = self.game.get_state(self.agents[0]).time_s
        late = self.held.wait(self._world_time, self.command_wait_s)
        if late:
            self.get_logger().warning(
                f"no command stamped at or after world time {self._world_time:.4f} s held for "
                f"{', '.join(late)} within {self.command_wait_s:g} s: stepping with what the vehicle holds "
                "(publish a command before each step; vehicle/disable ends being under command)",
                throttle_duration_sec=5.0)

    def _open_episode_files(self, replay: str, log: str) -> None:
        """The launch's episode_replay and episode_log, as soon as the game answers (retrying while
        it is not reachable; a refusal is logged once and ends it)."""
        for what, path, request in (("replay", replay, self.game.replay_start),
                                    ("record", log, self.game.record_start)):
            if not path:
                continue
            while self.context.ok():
                try:
                    request(path)
                    self.get_logger().info(f"episode {what}: {path}")
                    break
                except ControlUnavailable:
                    threading.Event().wait(0.2)
                except ControlRefused as exc:
                    self.get_logger().error(f"episode {what} {path} refused: {exc}")
                    break

    # -- services --------------------------------------------------------------------------------

    def _features(self, request: Any, response: Any) -> None:
        response.features.features = list(FEATURES)
        response.features.custom_info = (
            "acres_sim sim_control on the ACRES control channel: entities are the agents; entity "
            f"state is base_footprint in '{self.world_frame}'; steps of 1/{PHYSICS_HZ} s answer after "
            "every agent's sim/barrier")

    def _get_simulation_state(self, request: Any, response: Any) -> None:
        try:
            paused = self.game.paused()
        except ControlUnavailable:
            response.state.state = SimulationState.STATE_NO_WORLD
            raise
        response.state.state = SimulationState.STATE_PAUSED if paused else SimulationState.STATE_PLAYING
        response.result.result = Result.RESULT_OK

    def _set_simulation_state(self, request: Any, response: Any) -> None:
        target = request.state.state
        if target not in (SimulationState.STATE_PLAYING, SimulationState.STATE_PAUSED):
            _fail(response, srv.SetSimulationState.Response.INCORRECT_TRANSITION,
                  f"cannot go to state {target}: the simulator can be PLAYING "
                  f"({SimulationState.STATE_PLAYING}) or PAUSED ({SimulationState.STATE_PAUSED})")
            return
        playing = target == SimulationState.STATE_PLAYING
        if self.game.paused() != playing:
            _fail(response, srv.SetSimulationState.Response.ALREADY_IN_TARGET_STATE,
                  f"the simulation is already {'playing' if playing else 'paused'}")
            return
        with self._step_lock:  # not in the middle of a stepping request
            self._world_time = None
            if playing:
                self.game.play()
            else:
                self.game.pause()
        response.result.result = Result.RESULT_OK

    def _step_simulation(self, request: Any, response: Any) -> None:
        if request.steps < 1:
            _fail(response, Result.RESULT_OPERATION_FAILED, "steps must be at least 1")
            return
        self._steps(request.steps, SERVICE_CHUNK_STEPS)
        response.result.result = Result.RESULT_OK

    def _reset_simulation(self, request: Any, response: Any) -> None:
        scope = RESET_SCOPES.get(request.scope)
        if scope is None:
            raise Unsupported(f"reset scope {request.scope} is not supported: TIME (1), STATE (2), both, "
                              "SPAWNED (4), DEFAULT (0) or ALL (255)")
        with self._step_lock:
            vehicle_barriers = [t for t in self.matched.topics if t.endswith("/" + topics.VEHICLE_BARRIER)]
            self._wait_publishers(vehicle_barriers)
            self._world_time = None
            self.held.forget()
            if self.episode is not None:
                self.episode.forget_steps()
            vehicle_since = self.vehicle_barriers.mark()
            reached = self.game.reset(scope)
            missing = self.vehicle_barriers.wait(reached.step, vehicle_since, self.barrier_timeout_s)
            if missing:
                raise OperationFailed(
                    f"the world was reset ({scope}), but no vehicle/barrier came within "
                    f"{self.barrier_timeout_s:g} s from: {', '.join(missing)} (is its vehicle_bridge "
                    "running and connected?)")
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

    def _get_entities(self, request: Any, response: Any) -> None:
        response.entities = self._matching(request.filters)
        response.result.result = Result.RESULT_OK

    def _get_entities_states(self, request: Any, response: Any) -> None:
        names = self._matching(request.filters)
        response.entities = names
        response.states = [self._entity_state(self.game.get_state(name)) for name in names]
        response.result.result = Result.RESULT_OK

    def _get_entity_state(self, request: Any, response: Any) -> None:
        response.state = self._entity_state(self.game.get_state(request.entity))
        response.result.result = Result.RESULT_OK

    def _set_entity_state(self, request: Any, response: Any) -> None:
        state = request.state
        if state.header.frame_id not in ("", self.world_frame):
            _fail(response, Result.RESULT_OPERATION_FAILED,
                  f"state.header.frame_id must be '{self.world_frame}' (or empty), got "
                  f"'{state.header.frame_id}'")
            return
        p, q = state.pose.position, state.pose.orientation
        v, w = state.twist.linear, state.twist.angular
        try:
            with self._step_lock:
                self._world_time = None
                self.game.set_state(request.entity, (p.x, p.y, p.z), (q.x, q.y, q.z, q.w),
                                    (v.x, v.y, v.z), (w.x, w.y, w.z))
        except ControlRefused as exc:
            if exc.code != "invalid_pose":
                raise
            _fail(response, srv.SetEntityState.Response.INVALID_POSE, str(exc))
            return
        response.result.result = Result.RESULT_OK

    def _get_spawnables(self, request: Any, response: Any) -> None:
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

    def _spawn_entity(self, request: Any, response: Any) -> None:
        pose = request.initial_pose
        if pose.header.frame_id not in ("", self.world_frame):
            _fail(response, srv.SpawnEntity.Response.INVALID_POSE,
                  f"initial_pose.header.frame_id must be '{self.world_frame}' (or empty), got "
                  f"'{pose.header.frame_id}'")
            return
        if request.resource_string:
            _fail(response, srv.SpawnEntity.Response.UNSUPPORTED_FORMAT,
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
            _fail(response, code, str(exc))
            return
        response.entity_name = state.name
        response.result.result = Result.RESULT_OK

    def _delete_entity(self, request: Any, response: Any) -> None:
        self.game.delete(request.entity)
        response.result.result = Result.RESULT_OK

    def _entity_state(self, state: AgentState) -> EntityState:
        msg = EntityState()
        msg.header.frame_id = self.world_frame
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

    # -- the action ------------------------------------------------------------------------------

    def _simulate_steps(self, goal_handle: Any) -> Any:
        steps = goal_handle.request.steps
        result = SimulateSteps.Result()
        feedback = SimulateSteps.Feedback()

        def after_chunk(done: int) -> bool:
            feedback.completed_steps, feedback.remaining_steps = done, steps - done
            goal_handle.publish_feedback(feedback)
            return not goal_handle.is_cancel_requested

        done = 0
        try:
            if steps < 1:
                raise OperationFailed("steps must be at least 1")
            done = self._steps(steps, self.feedback_steps, after_chunk)
        except (ControlUnavailable, ControlRefused, OperationFailed) as exc:
            _fail(result, Result.RESULT_OPERATION_FAILED, str(exc))
            goal_handle.abort()
            return result
        if done < steps:
            _fail(result, Result.RESULT_OPERATION_FAILED, f"cancelled after {done} of {steps} steps")
            goal_handle.canceled()
            return result
        result.result.result = Result.RESULT_OK
        goal_handle.succeed()
        return result


def _fail(response: Any, code: int, message: str) -> None:
    response.result.result = code
    response.result.error_message = message


def main(args: list[str] | None = None) -> int:
    return run(SimControl, "sim_control", args)


if __name__ == "__main__":
    sys.exit(main())
