"""The subscriptions a lockstep step waits on, for sim_control and the scenario runner: every agent's
sim/barrier, and with vehicle_bridges its vehicle/barrier and vehicle/held_command, fed into the
ROS-free Lockstep (acres_sim/control/lockstep.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import Header, UInt64

from acres_sim import topics
from acres_sim.control.lockstep import BarrierWatch, HeldCommands, Lockstep, PublishersMatched

# The bridges' barriers and their readers here. Transient-local: a writer sends a barrier only to
# the readers it has matched, and its side of a match can come after the reader's (PublishersMatched
# gives it 0.25 s); on a loaded machine it came later, and a session's first step waited 30 s for a
# barrier sent to no one. A late match now gets the last barriers. A volatile reader (a user's
# default) matches as before and gets no history.
BARRIER_QOS = QoSProfile(depth=10, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)
HELD_QOS = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.TRANSIENT_LOCAL)


def watch_lockstep(node: Node, agents: Sequence[str], vehicle_bridges: bool, barrier_timeout_s: float,
                   command_wait_s: float, warn: Callable[[str], None]) -> Lockstep:
    """The Lockstep fed by subscriptions on `node` (spin it on an executor no blocked call starves)."""
    barriers = BarrierWatch(agents)
    vehicle_barriers = BarrierWatch(agents if vehicle_bridges else [])
    held = HeldCommands(agents if vehicle_bridges else [])
    counts: dict[str, Callable[[], int]] = {}  # each barrier topic's publishers
    for agent in agents:
        sub = node.create_subscription(
            UInt64, f"/{agent}/{topics.SIM_BARRIER}",
            lambda msg, agent=agent: barriers.arrived(agent, msg.data), BARRIER_QOS)
        counts[sub.topic_name] = sub.get_publisher_count
        if vehicle_bridges:
            sub = node.create_subscription(
                UInt64, f"/{agent}/{topics.VEHICLE_BARRIER}",
                lambda msg, agent=agent: vehicle_barriers.arrived(agent, msg.data), BARRIER_QOS)
            counts[sub.topic_name] = sub.get_publisher_count
            node.create_subscription(
                Header, f"/{agent}/{topics.VEHICLE_HELD_COMMAND}",
                lambda msg, agent=agent: held.update(agent, msg.stamp.sec + msg.stamp.nanosec * 1e-9,
                                                     msg.frame_id), HELD_QOS)
    return Lockstep(barriers, vehicle_barriers, held, PublishersMatched(counts), barrier_timeout_s,
                    command_wait_s, warn, "/" + topics.VEHICLE_BARRIER)
