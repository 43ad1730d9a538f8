"""The scenario runner's ROS side: the lockstep watch (barriers and held commands of every agent), the
ticks' time on /clock (lockstep), the Ackermann commands of the scripted agents and vehicle/disable,
on a node spun by a thread of its own. One per runner process; a warm runner's next run begins it
afresh (begin) without a new node, so the session's processes need not discover it again.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from acres_sim.convert.stamps import stamp_to_sec_nanosec
from acres_sim.middleware import dds
from acres_sim.scenario.model import Scenario
from acres_sim.scenario.scripted import WaypointDriver, scripted_commands
from acres_sim.topics import (
    ACKERMANN_CMD,
    BRAKE_CMD,
    CLOCK,
    CMD_VEL,
    GEAR_CMD,
    HELD_AWAITING,
    STEERING_CMD,
    THROTTLE_CMD,
    VEHICLE_DISABLE,
    VEHICLE_REFUSED,
)

COMMAND_TOPICS = (ACKERMANN_CMD, CMD_VEL, STEERING_CMD, THROTTLE_CMD, BRAKE_CMD, GEAR_CMD)
BARRIER_TIMEOUT_S = 30.0
CLOCK_AGAIN_S = 0.1  # /clock (best effort) said again while the world waits at a tick
CLOCK_SETTLE_S = 0.02  # between a tick's barriers and its /clock
FIRST_CLOCK_SETTLE_S = 0.5  # ... at the first tick
# What vehicle/held_command's source means, for a message that names what a stack last sent.
SOURCE_INPUTS = {"ackermann": ACKERMANN_CMD, "cmd_vel": CMD_VEL,
                 "dbw": f"drive-by-wire ({STEERING_CMD}, {THROTTLE_CMD}, {BRAKE_CMD})"}


class RunnerRos:
    """The ROS side of a runner whose sessions serve `agents` (lockstep: it says the ticks)."""

    def __init__(self, agents: list[str], lockstep: bool):
        import rclpy
        from ackermann_msgs.msg import AckermannDriveStamped
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.signals import SignalHandlerOptions
        from rosgraph_msgs.msg import Clock
        from std_msgs.msg import Empty, String

        from acres_sim.nodes.lockstep_watch import HELD_QOS, watch_lockstep
        from acres_sim.nodes.sim_bridge import CLOCK_QOS
        from acres_sim.nodes.vehicle_bridge import COMMAND_QOS

        self._rclpy = rclpy
        self._msg, self._clock_msg, self._empty = AckermannDriveStamped, Clock, Empty
        # The package's Fast DDS profile for this participant (its announcements every 0.5 s: a stack
        # started beside the session finds the runner at once), not handed on to the stack.
        with dds.profile_while_joining():
            rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
            self.node = rclpy.create_node("scenario_runner")
        self._agents = agents
        self.lockstep = watch_lockstep(self.node, agents, True, BARRIER_TIMEOUT_S, 0.0,
                                       lambda text: self.node.get_logger().warning(text))
        self._ackermann: dict[str, Any] = {}  # the scripted agents' publishers, made when first scripted
        self._disable = {a: self.node.create_publisher(Empty, f"/{a}/{VEHICLE_DISABLE}", COMMAND_QOS)
                         for a in agents}
        # Lockstep: the ticks' time, said by the runner (the sim_bridges do not publish /clock then).
        self._clock = self.node.create_publisher(Clock, CLOCK, CLOCK_QOS) if lockstep else None
        if self._clock is not None:
            self.node.create_timer(CLOCK_AGAIN_S, self._clock_again)
        # What each agent's vehicle_bridge last refused (named when its stack's commands stop counting).
        self.refused: dict[str, str] = {}
        for a in agents:
            self.node.create_subscription(String, f"/{a}/{VEHICLE_REFUSED}",
                                          lambda msg, name=a: self.refused.__setitem__(name, msg.data),
                                          HELD_QOS)
        self._scripted: dict[str, WaypointDriver] = {}
        self._starts: dict[str, tuple[float, float, float]] = {}
        self._states: dict[str, Any] = {}  # each agent's latest AgentState (the scripted agents' drivers)
        self._tick: Any = None
        self._executor = SingleThreadedExecutor()
        self._executor.add_node(self.node)
        self._thread = threading.Thread(target=self._executor.spin, name="scenario-ros", daemon=True)
        self._thread.start()

    def begin(self, scenario: Scenario) -> None:
        """A run of `scenario` begins: no tick said yet, nothing refused, its scripted agents."""
        from acres_sim.fake_game.simulation.vehicle_model import VEHICLE_PARAMS

        self._tick = None
        self.refused.clear()
        self._states = {}
        self._scripted = {}
        for a in scenario.agents:
            if a.waypoints:
                params = VEHICLE_PARAMS[a.vehicle]
                self._scripted[a.name] = WaypointDriver(a.waypoints, a.speed_mps, params.wheelbase_m,
                                                        params.max_steer_rad)
                if a.name not in self._ackermann:
                    self._ackermann[a.name] = self.node.create_publisher(
                        self._msg, f"/{a.name}/{ACKERMANN_CMD}", 10)
        self._starts = {a.name: (a.pose.x, a.pose.y, a.pose.yaw) for a in scenario.agents}

    @property
    def scripted(self) -> list[str]:
        return list(self._scripted)

    def tick(self, t: float, settle: Callable[[float], object] = time.sleep) -> None:
        """/clock says tick t (its data delivered), now and every CLOCK_AGAIN_S until the next.
        settle(limit_s): the grace before it (a wait of at most limit_s)."""
        if self._clock is None:
            return
        # The data are delivered (barriers), but a stack takes its queued messages one per wait of
        # its executor, timers first: a moment's grace lets it read them all before its timers fire
        # (more at the first tick: a stack's first callbacks are slow, and its queue is full).
        settle(CLOCK_SETTLE_S if self._tick is not None else FIRST_CLOCK_SETTLE_S)
        msg = self._clock_msg()
        msg.clock.sec, msg.clock.nanosec = stamp_to_sec_nanosec(t)
        self._tick = msg
        self._clock.publish(msg)

    def _clock_again(self) -> None:
        if self._tick is not None:
            self._clock.publish(self._tick)

    def wait_clock_matched(self, timeout_s: float) -> bool:
        """Until this runner's /clock writer has matched every /clock reader in the graph (False after
        timeout_s; True at once in real time, where the runner says no ticks)."""
        if self._clock is None:
            return True
        deadline = time.monotonic() + timeout_s
        while self._clock.get_subscription_count() < self.node.count_subscribers(CLOCK):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)
        return True

    def release(self) -> None:
        """vehicle/disable to every agent's vehicle_bridge: a vehicle that a reset left awaiting the
        command of a stack now gone drives its route again, as in a session just started."""
        for publisher in self._disable.values():
            publisher.publish(self._empty())

    def last_sent(self, agents: list[str]) -> str:
        """What each agent's stack last sent that counts, and what was refused since, in words."""
        _, held = self.lockstep.held.snapshot()
        parts = []
        for agent in agents:
            h = held.get(agent)
            if h is None:
                said = f"{agent}'s vehicle_bridge has not said what it holds"
            elif h[1] in ("", HELD_AWAITING):
                said = f"{agent} holds no command"
            else:
                said = (f"{agent} last held {SOURCE_INPUTS.get(h[1], h[1])} stamped {h[0]:.3f} s, "
                        f"{time.monotonic() - h[2]:.1f} s ago")
            refused = self.refused.get(agent)
            parts.append(said + (f"; refused since: {refused}" if refused else ""))
        return "; ".join(parts)

    def commanding(self) -> set[str]:
        """The agents whose command topics something besides this runner publishes on."""
        out = set()
        for agent in self._agents:
            own = 1 if agent in self._ackermann else 0
            if any(self.node.count_publishers(f"/{agent}/{topic}") > (own if topic == ACKERMANN_CMD else 0)
                   for topic in COMMAND_TOPICS):
                out.add(agent)
        return out | set(self._scripted)

    def see(self, states: dict[str, Any]) -> None:
        if self._scripted:  # only the scripted agents' drivers need where they are
            self._states = {agent["name"]: agent for agent in states.get("agents", [])}

    def drive_scripted(self, now: float) -> None:
        """Each scripted agent's command for world time `now` (stamped with it)."""
        for name, (steer, speed) in scripted_commands(self._scripted, self._states, self._starts).items():
            msg = self._msg()
            sec = int(now)
            msg.header.stamp.sec, msg.header.stamp.nanosec = sec, int(round((now - sec) * 1e9))
            msg.drive.steering_angle, msg.drive.speed = float(steer), float(speed)
            self._ackermann[name].publish(msg)
