"""vehicle_description: one agent's robot_description (its vehicle's URDF, transient local) and
joint_states (the front wheels' steering by the Ackermann geometry, every wheel's rotation), in the
agent's namespace, for robot_state_publisher, rviz2's RobotModel and Foxglove.

The dimensions are the agent's AgentInfo on /sim/agents when sim_control runs, else those of the
`vehicle` parameter's model; a new AgentInfo makes the description again. The joints follow the
best source the session has (acres_sim/description/joint_sources.py): the game's agent states, the
Vehicle Bridge's ackermann_state, or the ground truth's speed with the wheels straight; each
JointState carries its source's stamp (world time), at its source's rate.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

from nav_msgs.msg import Odometry
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from acres_sim import topics
from acres_sim.description.joint_sources import (
    AGENT_STATES,
    GROUND_TRUTH,
    NAMES,
    VEHICLE_REPORTS,
    JointSources,
)
from acres_sim.description.vehicle_urdf import VehicleGeometry, vehicle_urdf
from acres_sim.description.wheel_joints import WheelJoints
from acres_sim.fake_game.simulation.vehicles import vehicle_geometry
from acres_sim.nodes.parameters import VEHICLE_DESCRIPTION, vehicle_description_config
from acres_sim.nodes.runner import RunnableNode, run

try:
    from acres_interfaces.msg import Agents, AgentStates
except ImportError:  # not built: the vehicle parameter's dimensions, ackermann_state or ground truth
    Agents = AgentStates = None
try:
    from ackermann_msgs.msg import AckermannDriveStamped
except ImportError:
    AckermannDriveStamped = None

LATCHED = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)
STEPS = QoSProfile(depth=120, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE)
JOINTS = QoSProfile(depth=10, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE)
SENSOR = QoSProfile(depth=10, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.BEST_EFFORT)


class VehicleDescription(RunnableNode):
    def __init__(self, **kwargs: Any):
        super().__init__("vehicle_description", **kwargs)
        self.config = config = vehicle_description_config(self.declare_table(VEHICLE_DESCRIPTION),
                                                          self.get_namespace())
        self._lock = threading.Lock()
        self._sources = JointSources(config.source_timeout_s)
        self._geometry: VehicleGeometry | None = None
        self._joints: WheelJoints | None = None
        self._description = self.create_publisher(String, topics.ROBOT_DESCRIPTION, LATCHED)
        self._joint_states = self.create_publisher(JointState, topics.JOINT_STATES, JOINTS)
        self._rsp_client: Any = None
        self._rsp_has = ""  # the description robot_state_publisher holds (the launch gave it the model's)
        self._rsp_wants = ""
        if config.robot_state_publisher:
            from rcl_interfaces.srv import SetParameters
            self._rsp_client = self.create_client(SetParameters, "robot_state_publisher/set_parameters")
            self.create_timer(1.0, self._update_rsp)
        if config.vehicle:
            self._describe(vehicle_geometry(config.vehicle), f"the {config.vehicle} model")
            self._rsp_has = self._rsp_wants
        sub = self.create_subscription
        if Agents is not None:
            sub(Agents, topics.SIM_AGENTS, self._on_agents, LATCHED)
            sub(AgentStates, topics.SIM_AGENT_STATES, self._on_states, STEPS)
        else:
            self.get_logger().warning("acres_interfaces does not import: no /sim/agents or /sim/agent_states "
                                      "(the vehicle parameter's dimensions; the joints from the reports "
                                      "or the ground truth)")
        if AckermannDriveStamped is not None:
            sub(AckermannDriveStamped, topics.ACKERMANN_STATE, self._on_ackermann, JOINTS)
        sub(Odometry, topics.GROUND_TRUTH_ODOM, self._on_odom, SENSOR)  # offered reliable: either matches
        if not config.vehicle and Agents is None:
            self.get_logger().error("no vehicle parameter and no /sim/agents: nothing to describe")

    # -- the description --------------------------------------------------------------------------

    def _on_agents(self, msg: Any) -> None:
        info = next((a for a in msg.agents if a.name == self.config.agent), None)
        if info is None:
            return
        try:
            geometry = VehicleGeometry.from_agent_info({
                "vehicle": info.vehicle, "wheelbase_m": info.wheelbase_m, "track_m": info.track_m,
                "wheel_radius_m": info.wheel_radius_m, "length_m": info.length_m, "width_m": info.width_m,
                "height_m": info.height_m, "rear_overhang_m": info.rear_overhang_m,
                "body_origin_flu_m": {"x": info.body_origin_flu_m.x, "y": info.body_origin_flu_m.y,
                                      "z": info.body_origin_flu_m.z}})
        except ValueError as exc:
            self.get_logger().error(f"/sim/agents: agent {self.config.agent}: {exc}; the description stays")
            return
        if geometry != self._geometry:
            self._describe(geometry, "/sim/agents")

    def _describe(self, geometry: VehicleGeometry, source: str) -> None:
        urdf = vehicle_urdf(geometry, self.config.frame_prefix, self.config.agent)
        with self._lock:
            self._geometry = geometry
            self._joints = WheelJoints(geometry, self.config.frame_prefix)
        self._description.publish(String(data=urdf))
        self.get_logger().info(
            f"robot_description of agent {self.config.agent}: a {geometry.vehicle} from {source} "
            f"(wheelbase {geometry.wheelbase_m:g} m, track {geometry.track_m:g} m, wheel radius "
            f"{geometry.wheel_radius_m:g} m, body {geometry.length_m:g} x {geometry.width_m:g} x "
            f"{geometry.height_m:g} m)")
        self._rsp_wants = urdf

    def _update_rsp(self) -> None:
        """robot_state_publisher's description set again once it differs (AgentInfo's dimensions),
        as soon as its parameter service answers."""
        from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
        from rcl_interfaces.srv import SetParameters

        if self._rsp_wants == self._rsp_has or not self._rsp_client.service_is_ready():
            return
        urdf = self._rsp_wants
        request = SetParameters.Request(parameters=[Parameter(
            name="robot_description",
            value=ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=urdf))])
        self._rsp_client.call_async(request)
        self._rsp_has = urdf
        self.get_logger().info("robot_state_publisher's robot_description set to the game's dimensions")

    # -- the joints -------------------------------------------------------------------------------

    def _on_states(self, msg: Any) -> None:
        state = next((a for a in msg.agents if a.name == self.config.agent), None)
        if state is not None:
            self._advance(AGENT_STATES, msg.header.stamp, state.speed_mps, state.steer_rad)

    def _on_ackermann(self, msg: Any) -> None:
        self._advance(VEHICLE_REPORTS, msg.header.stamp, msg.drive.speed, msg.drive.steering_angle)

    def _on_odom(self, msg: Odometry) -> None:
        self._advance(GROUND_TRUTH, msg.header.stamp, msg.twist.twist.linear.x, 0.0)

    def _advance(self, rank: int, stamp: Any, speed_mps: float, road_wheel_rad: float) -> None:
        with self._lock:
            joints = self._joints
            if joints is None:
                return
            t = stamp.sec + stamp.nanosec * 1e-9
            follow, changed = self._sources.take(rank, t)
            if not follow:
                return
            if changed:
                joints.restart()
                self.get_logger().info(f"joint_states follow {NAMES[rank]}")
            sample = joints.update(t, float(speed_mps), float(road_wheel_rad))
        msg = JointState(name=sample.names, position=sample.positions, velocity=sample.velocities)
        msg.header.stamp = stamp
        self._joint_states.publish(msg)


def main(args: list[str] | None = None) -> int:
    return run(VehicleDescription, "vehicle_description", args)


if __name__ == "__main__":
    sys.exit(main())
