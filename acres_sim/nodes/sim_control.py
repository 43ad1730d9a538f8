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

import sys
import threading
from collections.abc import Callable
from typing import Any

from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import Executor, MultiThreadedExecutor, SingleThreadedExecutor
from rclpy.node import Node
from simulation_interfaces.action import SimulateSteps
from simulation_interfaces.msg import Result

from acres_sim.channels.control import NOT_FOUND
from acres_sim.game.control_client import ControlClient, ControlRefused, ControlUnavailable
from acres_sim.nodes.acres_services import IMPORT_ERROR
from acres_sim.nodes.lockstep_watch import watch_lockstep
from acres_sim.nodes.parameters import SIM_CONTROL, sim_control_config
from acres_sim.nodes.runner import RunnableNode, run
from acres_sim.nodes.simulation_services import (
    SERVED,
    UNSUPPORTED,
    OperationFailed,
    SimulationServices,
    Unsupported,
    fail_with,
)


class SimControl(RunnableNode):
    def __init__(self, **kwargs: Any):
        super().__init__("sim_control", **kwargs)
        config = sim_control_config(self.declare_table(SIM_CONTROL))
        self.barrier_timeout_s = config.barrier_timeout_s
        self.feedback_steps = config.feedback_steps
        self.agents = agents = list(config.agents)
        self.game = ControlClient(config.control_port, timeout_s=config.request_timeout_s)
        self.vehicle_bridges = config.vehicle_bridges
        # Barriers on a hidden node of their own (see the module's docstring).
        self._barrier_node = Node("_sim_control_barriers", namespace=self.get_namespace(),
                                  context=self.context)
        self.lockstep = watch_lockstep(
            self._barrier_node, agents, config.vehicle_bridges, config.barrier_timeout_s,
            config.command_wait_s, lambda text: self.get_logger().warning(text, throttle_duration_sec=5.0))

        group = ReentrantCallbackGroup()
        self.episode = None
        if IMPORT_ERROR is None:
            # Imported here: they need acres_interfaces.
            from acres_sim.nodes.episode_services import EpisodeServices
            from acres_sim.nodes.world_services import WorldServices

            self.episode = EpisodeServices(self, self.game, config.control_port, group)
            WorldServices(self, self.game, group)
            if config.episode_log or config.episode_replay:
                threading.Thread(target=self._open_episode_files, name="episode-files", daemon=True,
                                 args=(config.episode_replay, config.episode_log)).start()
        else:
            self.get_logger().warning(
                f"acres_interfaces does not import ({IMPORT_ERROR}): no /sim/episode, /sim/agents, "
                "/sim/agent_states and no episode log services (build acres_interfaces: see the README)")
        episode = self.episode
        self.simulation = SimulationServices(
            self.game, self.lockstep, config.world_frame, agents[0],
            episode.states_delivered if episode is not None else None,
            episode.forget_steps if episode is not None else None)
        for name, kind in (*SERVED.items(), *((n, k) for n, (k, _what) in UNSUPPORTED.items())):
            self.create_service(kind, name, self._guarded(name, self.simulation.handler(name)),
                                callback_group=group)
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

    def _guarded(self, name: str, handler: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
        """Every answer carries a result: the channel's errors become OPERATION_FAILED (or the code
        the handler picked), and nothing a client sends takes the node down."""
        def call(request: Any, response: Any) -> Any:
            try:
                handler(request, response)
            except ControlUnavailable as exc:
                fail_with(response, Result.RESULT_OPERATION_FAILED, f"the simulator is not reachable: {exc}")
            except ControlRefused as exc:
                code = Result.RESULT_NOT_FOUND if exc.code == NOT_FOUND else Result.RESULT_OPERATION_FAILED
                fail_with(response, code, str(exc))
            except OperationFailed as exc:
                fail_with(response, Result.RESULT_OPERATION_FAILED, str(exc))
            except Unsupported as exc:
                fail_with(response, Result.RESULT_FEATURE_UNSUPPORTED, str(exc))
            except Exception as exc:  # noqa: BLE001 -- answer and keep serving
                self.get_logger().error(f"{name}: {type(exc).__name__}: {exc}")
                fail_with(response, Result.RESULT_OPERATION_FAILED, f"{type(exc).__name__}: {exc}")
            return response
        return call

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
            done = self.simulation.steps(steps, self.feedback_steps, after_chunk)
        except (ControlUnavailable, ControlRefused, OperationFailed) as exc:
            fail_with(result, Result.RESULT_OPERATION_FAILED, str(exc))
            goal_handle.abort()
            return result
        if done < steps:
            fail_with(result, Result.RESULT_OPERATION_FAILED, f"cancelled after {done} of {steps} steps")
            goal_handle.canceled()
            return result
        result.result.result = Result.RESULT_OK
        goal_handle.succeed()
        return result


def main(args: list[str] | None = None) -> int:
    return run(SimControl, "sim_control", args, dds_profile=True)  # a stack that joins finds it at once


if __name__ == "__main__":
    sys.exit(main())
