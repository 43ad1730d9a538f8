"""The driving tests' session and learner: fake_game with a Vehicle Bridge per agent, a sim_bridge
and a vehicle_bridge per agent, sim_control, this process's rclpy graph as the learner (commands,
step_simulation or real time, the ground truth), and pure pursuit on a figure eight. Imported by
the test modules once they know rclpy, simulation_interfaces and ackermann_msgs import."""

from __future__ import annotations

import math
import sys
import time

import numpy as np
import pytest

from support.bridge import Graph, Process, call_service, free_ports, ros_env, start_bridge, start_fake_game
from ackermann_msgs.msg import AckermannDriveStamped
from geometry_msgs.msg import Twist
from nav_msgs.msg import Odometry
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from simulation_interfaces import srv
from simulation_interfaces.msg import Result
from std_msgs.msg import Bool, Empty, Header

from acres_sim.fake_game.simulation.vehicle_model import VEHICLE_PARAMS
from harness.processes import start_vehicle_bridge

try:
    from ds_dbw_msgs import msg as dbw
except ImportError:  # released for Humble and Jazzy only
    dbw = None

AGENTS = ("polaris", "maxxum")
CALL_TIMEOUT_S = 60.0
LATCHED = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                     reliability=ReliabilityPolicy.RELIABLE)
DEEP = QoSProfile(depth=5000, reliability=ReliabilityPolicy.RELIABLE)  # every message a run sends
CONTROL_STEPS = 12  # the learner acts every 12 physics steps: 10 Hz
needs_dbw = pytest.mark.skipif(dbw is None, reason="ds_dbw_msgs is not installed (released for Humble and "
                               "Jazzy only): the drive-by-wire topics are not served")


def _sec(stamp) -> float:
    return stamp.sec + stamp.nanosec * 1e-9


def _yaw(q) -> float:
    return math.atan2(2.0 * (q.w * q.z + q.x * q.y), 1.0 - 2.0 * (q.y * q.y + q.z * q.z))


class DriveSession:
    """fake_game (lockstep or real time, Vehicle Bridges) + a sim_bridge and a vehicle_bridge per
    agent + sim_control (lockstep) + the test's graph."""

    def __init__(self, domain_id: int, lockstep: bool, cached: bool = True):
        self.domain_id, self.lockstep = domain_id, lockstep
        *ports, control_port = free_ports(2 * len(AGENTS) + 1)
        ports, vehicle_ports = ports[:len(AGENTS)], ports[len(AGENTS):]
        args = ["--ports", ",".join(map(str, ports)), "--vehicles", ",".join(AGENTS),
                "--vehicle-ports", ",".join(map(str, vehicle_ports)), "--control-port", str(control_port)]
        args += ["--lockstep", "--realtime-factor", "0"] if lockstep else []
        # Cached: clouds and images rendered once and served again (the driving is what is tested
        # here; test_a_driven_vehicles_lidar_lands_on_the_terrain renders them).
        args += ["--cached"] if cached else []
        # Lockstep on the plane z = 0: the step responses against the model without the grade.
        args += ["--flat-ground"] if lockstep else []
        self.processes: list[Process] = []
        self.game = start_fake_game(args, domain_id)
        self.graph: Graph | None = None
        try:
            self.game.wait_for(f"ACRES_SIM_CONTROL_LISTENING port={control_port}", 60)
            for index, (agent, port, vport) in enumerate(zip(AGENTS, ports, vehicle_ports)):
                self.processes.append(start_bridge(port, domain_id, [
                    f"frame_prefix:={agent}/", f"publish_clock:={'true' if index == 0 else 'false'}"],
                    namespace=f"/{agent}"))
                self.processes.append(start_vehicle_bridge(vport, domain_id, [
                    f"lockstep:={'true' if lockstep else 'false'}", f"frame_id:={agent}/base_footprint"],
                    namespace=f"/{agent}"))
            self.processes.append(Process(
                [sys.executable, "-m", "acres_sim.nodes.sim_control", "--ros-args",
                 "-p", f"control_port:={control_port}", "-p", f"agents:=[{','.join(AGENTS)}]",
                 "-p", "vehicle_bridges:=true", "-p", "barrier_timeout_s:=10.0"],
                ros_env(domain_id), "sim_control"))
            self.graph = g = Graph(domain_id)
            for agent in AGENTS:
                g.subscribe(Odometry, f"/{agent}/ground_truth/odom", DEEP)
                g.subscribe(AckermannDriveStamped, f"/{agent}/vehicle/ackermann_state", DEEP)
                g.subscribe(Header, f"/{agent}/vehicle/held_command", LATCHED)
                g.subscribe(Bool, f"/{agent}/vehicle/dbw_enabled", LATCHED)
            node = g.node
            self.ackermann = {
                a: node.create_publisher(AckermannDriveStamped, f"/{a}/vehicle/ackermann_cmd", 10)
                for a in AGENTS}
            self.twist = {a: node.create_publisher(Twist, f"/{a}/cmd_vel", 10) for a in AGENTS}
            self.enable = {a: node.create_publisher(Empty, f"/{a}/vehicle/enable", 10) for a in AGENTS}
            self.disable = {a: node.create_publisher(Empty, f"/{a}/vehicle/disable", 10) for a in AGENTS}
            if dbw is not None:
                for a in AGENTS:
                    g.subscribe(dbw.SteeringReport, f"/{a}/vehicle/steering/report", DEEP)
                    g.subscribe(dbw.ThrottleReport, f"/{a}/vehicle/throttle/report", DEEP)
                self.steering = {a: node.create_publisher(dbw.SteeringCmd, f"/{a}/vehicle/steering/cmd", 10)
                                 for a in AGENTS}
                self.throttle = {a: node.create_publisher(dbw.ThrottleCmd, f"/{a}/vehicle/throttle/cmd", 10)
                                 for a in AGENTS}
                self.brake = {a: node.create_publisher(dbw.BrakeCmd, f"/{a}/vehicle/brake/cmd", 10)
                              for a in AGENTS}
            self.clients = {name: node.create_client(kind, f"/{name}") for name, kind in (
                ("step_simulation", srv.StepSimulation), ("reset_simulation", srv.ResetSimulation),
                ("set_simulation_state", srv.SetSimulationState))}
            g.spin_until(lambda: all(c.service_is_ready() for c in self.clients.values()), 60, "sim_control")
            for proc, agent in zip(self.processes[1::2], AGENTS):  # the vehicle_bridges
                proc.wait_for(f"vehicle {agent} of agent {agent}", 60)  # the game described it
            g.wait_matched([f"/{a}/{t}" for a in AGENTS for t in (
                "ground_truth/odom", "vehicle/ackermann_state", "vehicle/held_command")], 60)
            if not cached:
                from sensor_msgs.msg import PointCloud2
                from tf2_msgs.msg import TFMessage
                g.subscribe(PointCloud2, "/polaris/lidar/points")
                g.subscribe(TFMessage, "/tf_static", QoSProfile(
                    depth=10, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                    reliability=ReliabilityPolicy.RELIABLE))
                g.wait_matched(["/polaris/lidar/points", "/tf_static"], 60)
            publishers = [*self.ackermann.values(), *self.twist.values(), *self.enable.values()]
            g.spin_until(lambda: all(p.get_subscription_count() > 0 for p in publishers), 30,
                         "vehicle_bridges")
        except BaseException:
            self.close()
            raise

    # -- calls --------------------------------------------------------------------------------

    def call(self, name: str, **fields):
        return call_service(self.graph, self.clients[name], CALL_TIMEOUT_S, **fields)

    def step(self, steps: int) -> None:
        answer = self.call("step_simulation", steps=steps)
        assert answer.result.result == Result.RESULT_OK, answer.result.error_message + self.logs()[-4000:]
        self.drain()

    def reset(self) -> None:
        answer = self.call("reset_simulation", scope=srv.ResetSimulation.Request.SCOPE_ALL)
        assert answer.result.result == Result.RESULT_OK, answer.result.error_message + self.logs()[-4000:]
        self.drain()

    def drain(self) -> None:
        """Take what the readers hold now: what a step's barriers promise is there already."""
        g = self.graph
        for topic, sub in g.subscriptions.items():
            while (taken := sub.handle.take_message(sub.msg_type, sub.raw)) is not None:
                g.received[topic].append((time.monotonic(), taken[0]))

    def spin(self, seconds: float) -> None:
        """Real time: the world moves by itself; take what comes for `seconds`."""
        self.graph.spin_for(seconds)

    def odom(self, agent: str) -> Odometry:
        return self.graph.messages(f"/{agent}/ground_truth/odom")[-1]

    def held(self, agent: str) -> Header:
        return self.graph.messages(f"/{agent}/vehicle/held_command")[-1]

    # -- commands -----------------------------------------------------------------------------

    def send_ackermann(self, agent: str, steer: float, speed: float, accel: float = 0.0,
                       steer_rate: float = 0.0) -> None:
        msg = AckermannDriveStamped()
        msg.drive.steering_angle, msg.drive.speed = float(steer), float(speed)
        msg.drive.acceleration, msg.drive.steering_angle_velocity = float(accel), float(steer_rate)
        self.ackermann[agent].publish(msg)

    def send_twist(self, agent: str, v: float, w: float) -> None:
        msg = Twist()
        msg.linear.x, msg.angular.z = float(v), float(w)
        self.twist[agent].publish(msg)

    def send_dbw(self, agent: str, steer_wheel_deg: float, throttle_pct: float, brake_pct: float) -> None:
        s = dbw.SteeringCmd(cmd=float(steer_wheel_deg), cmd_type=dbw.SteeringCmd.CMD_ANGLE, enable=True)
        t = dbw.ThrottleCmd(cmd=float(throttle_pct), cmd_type=dbw.ThrottleCmd.CMD_PERCENT, enable=True)
        b = dbw.BrakeCmd(cmd=float(brake_pct), cmd_type=dbw.BrakeCmd.CMD_PERCENT, enable=True)
        for pub, msg in ((self.steering, s), (self.throttle, t), (self.brake, b)):
            pub[agent].publish(msg)

    def wait_source(self, agent: str, source: str) -> None:
        """Until the vehicle holds a command of `source` (the very first command of a session is
        the one the lockstep rule cannot know of in advance)."""
        self.graph.spin_until(lambda: self.graph.messages(f"/{agent}/vehicle/held_command")
                              and self.held(agent).frame_id == source, 20, f"{agent} driven by {source}")

    def release(self, agent: str) -> None:
        """vehicle/disable: nothing under command, sim_control no longer waits for this agent."""
        self.disable[agent].publish(Empty())
        self.wait_source(agent, "")

    def close(self) -> list[int | None]:
        codes = [p.stop() for p in reversed(self.processes)]
        if self.graph is not None:
            self.graph.close()
        self.game.stop()
        return codes

    def logs(self) -> str:
        return "\n".join(p.output() for p in self.processes)


# ---------------------------------------------------------------------------------------------
# Paths and pure pursuit


def figure_eight(x0: float, y0: float, yaw0: float, radius: float) -> np.ndarray:
    """Two circles of `radius` touching at the start, left loop first, as a dense polyline."""
    theta = np.linspace(0.0, 2.0 * np.pi, 400, endpoint=False)
    left = np.stack([radius * np.sin(theta), radius - radius * np.cos(theta)], axis=1)
    right = np.stack([radius * np.sin(theta), -radius + radius * np.cos(theta)], axis=1)
    local = np.concatenate([left, right])
    c, s = math.cos(yaw0), math.sin(yaw0)
    return np.stack([x0 + c * local[:, 0] - s * local[:, 1], y0 + s * local[:, 0] + c * local[:, 1]], axis=1)


class PurePursuit:
    """Follows a closed polyline: the nearest point searched forward from the last (the loops of
    a figure eight cross), the goal `lookahead` m further along."""

    def __init__(self, path: np.ndarray, wheelbase: float, lookahead: float):
        self.path, self.wheelbase, self.lookahead = path, wheelbase, lookahead
        self.index = 0

    def curvature(self, x: float, y: float, yaw: float) -> float:
        n = len(self.path)
        window = (self.index + np.arange(60)) % n
        d = np.hypot(self.path[window, 0] - x, self.path[window, 1] - y)
        self.index = int(window[int(np.argmin(d))])
        ahead = self.index
        while math.hypot(self.path[ahead, 0] - x, self.path[ahead, 1] - y) < self.lookahead:
            ahead = (ahead + 1) % n
        gx, gy = self.path[ahead] - (x, y)
        alpha = math.atan2(gy, gx) - yaw
        return 2.0 * math.sin(alpha) / self.lookahead


def cross_track(path: np.ndarray, x: float, y: float) -> float:
    return float(np.min(np.hypot(path[:, 0] - x, path[:, 1] - y)))


def follow(session: DriveSession, agent: str, how: str, seconds: float, speed: float = 3.0) -> dict:
    """Pure pursuit on a figure eight from the agent's pose after a reset, through `how`
    (ackermann, cmd_vel, dbw), acting every CONTROL_STEPS physics steps (lockstep: then stepping;
    real time: then waiting that long). The cross-track and speed errors after the first 4 s."""
    params = VEHICLE_PARAMS[agent]
    session.reset()
    advance = (lambda: session.step(CONTROL_STEPS)) if session.lockstep else (
        lambda: session.spin(CONTROL_STEPS / 120))
    advance()
    start = session.odom(agent)
    t_start = _sec(start.header.stamp)
    pose0 = start.pose.pose
    path = figure_eight(pose0.position.x, pose0.position.y, _yaw(pose0.orientation), 5.0)
    pursuit = PurePursuit(path, params.wheelbase_m, 3.0)
    errors, speed_errors = [], []
    if how == "dbw":
        session.enable[agent].publish(Empty())
    integral, first = 0.0, True
    while True:
        odom = session.odom(agent)
        now = _sec(odom.header.stamp) - t_start
        if now >= seconds:
            break
        pose, v = odom.pose.pose, odom.twist.twist.linear.x
        x, y, yaw = pose.position.x, pose.position.y, _yaw(pose.orientation)
        if now >= 4.0:
            errors.append(cross_track(path, x, y))
            speed_errors.append(abs(v - speed))
        kappa = pursuit.curvature(x, y, yaw)
        steer = max(-params.max_steer_rad, min(params.max_steer_rad, math.atan(params.wheelbase_m * kappa)))
        if how == "ackermann":
            session.send_ackermann(agent, steer, speed)
        elif how == "cmd_vel":
            session.send_twist(agent, speed, speed * kappa)
        else:  # the learner's own speed loop on the pedals
            integral = max(-2.0, min(2.0, integral + (speed - v) * CONTROL_STEPS / 120))
            pedal = 0.35 * (speed - v) + 0.15 * integral + 0.1
            session.send_dbw(agent, math.degrees(steer) * params.steering_ratio,
                             100 * min(1.0, max(0.0, pedal)), 100 * min(1.0, max(0.0, -pedal)))
        if first:
            session.wait_source(agent, how)
            first = False
        advance()
    session.release(agent)
    return {"cross_track_rms_m": round(float(np.sqrt(np.mean(np.square(errors)))), 3),
            "cross_track_max_m": round(max(errors), 3),
            "speed_error_mean_mps": round(float(np.mean(speed_errors)), 3), "samples": len(errors)}


def check_following(result: dict) -> None:
    assert result["samples"] > 20, result
    assert result["cross_track_rms_m"] < 0.3, result
    assert result["cross_track_max_m"] < 0.8, result
    assert result["speed_error_mean_mps"] < 0.3, result
