"""vehicle_bridge: drive one agent from ROS 2 (drive-by-wire, Ackermann, cmd_vel) through the game's
Vehicle Bridge, and publish what the vehicle reports.

The meaning of every command lives in acres_sim.drive (ROS-free); the game's protocol in
acres_sim.game.vehicle_client. This node turns messages into calls and reports into messages.

Time: the game reports in the vehicle's own time; the client converts it with the Clock frames'
offset its sim_bridge publishes on sim/clock_offset, before that by the report's step (game.vehicle_time).

Threads: subscriptions run on the executor; reports, barriers and the game's "held" answers arrive
on the client's reader thread. One lock orders the driver's state and what is forwarded.
"""

from __future__ import annotations

import math
import sys
import threading
import time
from collections import deque
from dataclasses import replace
from typing import Any

from ackermann_msgs.msg import AckermannDriveStamped
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import Twist, TwistStamped
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import Bool, Empty, Float64, Header, String, UInt64

from acres_sim import topics
from acres_sim.convert.stamps import stamp_to_sec_nanosec
from acres_sim.drive.driver import (
    GEAR_VALUE,
    PEDAL_CMD_PERCENT,
    STEER_CMD_ANGLE,
    Ignored,
    HeldCommand,
    Refused,
    Subsystem,
    Unsupported,
    VehicleDriver,
    ros_stamp,
)
from acres_sim.channels.vehicle import VehicleInfo, VehicleReport
from acres_sim.drive.input_faults import InputFaults
from acres_sim.game.vehicle_client import VehicleClient
from acres_sim.middleware.cdr_publisher import wait_until_acked
from acres_sim.nodes.lockstep_watch import BARRIER_QOS
from acres_sim.nodes.parameters import VEHICLE_BRIDGE, vehicle_bridge_config
from acres_sim.nodes.runner import RosLogging, RunnableNode, run

try:  # released for Humble and Jazzy, not for Kilted: without it, Ackermann and Twist only
    from ds_dbw_msgs import msg as dbw
    DBW_IMPORT_ERROR: str | None = None
except ImportError as exc:
    dbw = None
    DBW_IMPORT_ERROR = str(exc)

COMMAND_QOS = QoSProfile(depth=10, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE)
REPORT_QOS = COMMAND_QOS
SAME_STEP_S = 0.5 / 120.0  # this close to a report's time, a stamp is of its step (not "ahead")
AHEAD_LIMIT_S = 60.0  # a command stamped further ahead of the vehicle's reports is not waited for
PLAYING_AFTER_S = 1.0  # lockstep: reports without a barrier this long (wall) mean the world plays
DEFERRED_INPUTS = 64  # inputs kept during one lockstep request (the oldest go first beyond this)
LATCHED_QOS = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)
# The vehicle parameters a driver needs, as read-only ROS parameters once the game named them.
INFO_PARAMETERS = ("wheelbase_m", "track_m", "wheel_radius_m", "max_steer_rad", "steering_ratio",
                   "max_speed_mps", "max_reverse_mps")


class VehicleBridge(RunnableNode):
    def __init__(self, **kwargs: Any):
        super().__init__("vehicle_bridge", **kwargs)
        self.config = config = vehicle_bridge_config(self.declare_table(VEHICLE_BRIDGE))
        self._lock = threading.Lock()
        # Lockstep: the step the last barrier (or the first report) was at, whether a step request
        # is under way (reports past it came), and the inputs that came during one: they act after
        # its barrier, as if they had come after it, so that the run does not depend on when they came.
        self._quiet_step: int | None = None
        self._stepping = False
        self._deferred: deque[tuple[str, Any, float | None]] = deque(maxlen=DEFERRED_INPUTS)
        self._pending_barrier: int | None = None  # a barrier waiting for the game to hold our commands
        # Reports with no barrier for PLAYING_AFTER_S: the world plays (PLAYING in a lockstep launch):
        # inputs act at once, the controller runs at every report, until the next barrier.
        self._playing = False
        self._draining = False  # the kept inputs are being applied: a new one waits behind them
        self._stepping_since: float | None = None  # wall time of the first report past the last barrier
        self._stopping = threading.Event()
        self.driver: VehicleDriver | None = None
        self.info: VehicleInfo | None = None
        self._held_published: HeldCommand | None = None
        self._warned_unsupported: set[str] = set()
        self._faults = InputFaults()  # applied at a limit, refused: counted and said
        self._enabled_published: bool | None = None

        pub = self.create_publisher
        self._ackermann_state = pub(AckermannDriveStamped, topics.ACKERMANN_STATE, REPORT_QOS)
        self._dbw_enabled = pub(Bool, topics.DBW_ENABLED, LATCHED_QOS)
        self._held = pub(Header, topics.VEHICLE_HELD_COMMAND, LATCHED_QOS)
        self._barrier = pub(UInt64, topics.VEHICLE_BARRIER, BARRIER_QOS)
        self._refused_pub = pub(String, topics.VEHICLE_REFUSED, LATCHED_QOS)
        self._diagnostics = pub(DiagnosticArray, topics.DIAGNOSTICS, REPORT_QOS)
        self.create_timer(1.0, self._publish_diagnostics)
        self._reports: list[Any] = [self._ackermann_state]
        sub = self.create_subscription
        sub(Empty, topics.VEHICLE_ENABLE, lambda _: self._switch(True), COMMAND_QOS)
        sub(Empty, topics.VEHICLE_DISABLE, lambda _: self._switch(False), COMMAND_QOS)
        sub(AckermannDriveStamped, topics.ACKERMANN_CMD, self._on_ackermann, COMMAND_QOS)
        if config.cmd_vel_stamped:
            sub(TwistStamped, topics.CMD_VEL, lambda m: self._on_twist(m.twist, m.header.stamp), COMMAND_QOS)
        else:
            sub(Twist, topics.CMD_VEL, lambda m: self._on_twist(m, None), COMMAND_QOS)
        if dbw is not None:
            self._steering_report = pub(dbw.SteeringReport, topics.STEERING_REPORT, REPORT_QOS)
            self._throttle_report = pub(dbw.ThrottleReport, topics.THROTTLE_REPORT, REPORT_QOS)
            self._brake_report = pub(dbw.BrakeReport, topics.BRAKE_REPORT, REPORT_QOS)
            self._gear_report = pub(dbw.GearReport, topics.GEAR_REPORT, REPORT_QOS)
            self._wheel_speeds = pub(dbw.WheelSpeeds, topics.WHEEL_SPEEDS, REPORT_QOS)
            self._velocity = pub(dbw.VehicleVelocity, topics.VEHICLE_VELOCITY, REPORT_QOS)
            self._reports += [self._steering_report, self._throttle_report, self._brake_report,
                              self._gear_report, self._wheel_speeds, self._velocity]
            sub(dbw.SteeringCmd, topics.STEERING_CMD, self._on_steering, COMMAND_QOS)
            sub(dbw.ThrottleCmd, topics.THROTTLE_CMD, self._on_throttle, COMMAND_QOS)
            sub(dbw.BrakeCmd, topics.BRAKE_CMD, self._on_brake, COMMAND_QOS)
            sub(dbw.GearCmd, topics.GEAR_CMD, self._on_gear, COMMAND_QOS)
        else:
            self.get_logger().warning(
                f"ds_dbw_msgs does not import ({DBW_IMPORT_ERROR}): serving vehicle/ackermann_cmd and "
                "cmd_vel "
                "only, without the drive-by-wire topics. Install ds_dbw_msgs (released for Humble and "
                "Jazzy: apt install ros-$ROS_DISTRO-ds-dbw-msgs, or build it from source) to get them.")
        self._publish_enabled(False)
        self._publish_held_locked(force=True)  # nothing under command yet (no lock: no thread runs)
        self.client = VehicleClient(config.vehicle_port, on_info=self._on_info, on_report=self._on_report,
                                    on_barrier=self._on_barrier, on_held=self._on_held,
                                    on_answer=self._publish_barrier_when_held,
                                    reconnect_min_s=config.reconnect_min_s,
                                    reconnect_max_s=config.reconnect_max_s,
                                    logger=RosLogging(self.get_logger()))
        # The game reports in vehicle time: the agent's sim_bridge tells the offset to world time.
        sub(Float64, topics.SIM_CLOCK_OFFSET, lambda m: self.client.set_clock_offset(m.data), LATCHED_QOS)
        self._disagreement_told = 0.0
        self.create_timer(5.0, self._check_vehicle_time)
        dbw_inputs = ", ".join((topics.STEERING_CMD, topics.THROTTLE_CMD, topics.BRAKE_CMD, topics.GEAR_CMD,
                                topics.VEHICLE_ENABLE, topics.VEHICLE_DISABLE, ""))
        self.get_logger().info(
            f"Vehicle Bridge 127.0.0.1:{config.vehicle_port}; inputs: {dbw_inputs if dbw else ''}"
            f"{topics.ACKERMANN_CMD}, {topics.CMD_VEL} "
            f"({'TwistStamped' if config.cmd_vel_stamped else 'Twist'}); "
            f"{'lockstep' if config.lockstep else 'real time'}")

    def start(self) -> None:
        self.client.start()

    def stop(self) -> None:
        self._stopping.set()
        self.client.stop()

    # -- the game's side (reader thread) ---------------------------------------------------------

    def _on_info(self, info: VehicleInfo) -> None:
        with self._lock:
            known = self.info
            if known is None:
                self.driver = VehicleDriver(info, self.config.command_timeout_s, self.config.speed_kp,
                                            self.config.speed_ki)
            elif known != info:
                self.get_logger().error(
                    f"the Vehicle Bridge now describes another vehicle ({info.vehicle}, was "
                    f"{known.vehicle}); "
                    "keeping the first: restart vehicle_bridge to drive it")
                return
            self.info = info
        if known is None:
            for name in INFO_PARAMETERS:
                self.declare_parameter(name, float(getattr(info, name)), ParameterDescriptor(
                    read_only=True, description=f"the vehicle's {name}, as the game gave it"))
            self.get_logger().info(
                f"vehicle {info.vehicle} of agent {info.agent}: wheelbase {info.wheelbase_m:g} m, "
                "road wheels "
                f"+-{math.degrees(info.max_steer_rad):.1f} deg, steering ratio {info.steering_ratio:g}, "
                f"{-info.max_reverse_mps:g}..{info.max_speed_mps:g} m/s")

    def _on_report(self, report: VehicleReport) -> None:
        with self._lock:
            driver = self.driver
            if driver is None:
                return
            reset = driver.on_report(report)
            if self._quiet_step is None or report.reset is not None:
                self._quiet_step = report.step  # connected, or reset: a barrier (if any) follows here
            elif report.step != self._quiet_step:
                self._stepping = True
                if self._stepping_since is None:
                    self._stepping_since = time.monotonic()
                elif not self._playing and time.monotonic() - self._stepping_since > PLAYING_AFTER_S:
                    self._playing = True
            drain = self._playing and bool(self._deferred) and not self._draining
            if reset:  # said even when unchanged: sim_control forgot what it knew at the reset
                self._publish_held_locked(force=True)
            elif not self.config.lockstep or self._playing:
                self._forward_locked()
            enabled, sources = driver.dbw_enabled, self._report_state_locked(driver)
        if drain:  # the world plays: what waited for a barrier acts now
            self._drain()
        self._publish_enabled(enabled)
        self._publish_reports(report, sources)

    def _on_barrier(self, step: int, time_s: float) -> None:
        with self._lock:
            if self.config.lockstep and self.driver is not None:
                self._forward_locked()  # the watchdog and the controller, between two requests
            self._quiet_step, self._stepping = step, False
            self._stepping_since, self._playing = None, False
            self._draining = True  # from here on, in the same hold of the lock: nothing overtakes them
        self._drain()
        with self._lock:
            self._pending_barrier = step
        self._publish_barrier_when_held()

    def _drain(self) -> None:
        """The inputs kept for a barrier, in their order; one that arrives meanwhile waits behind
        them (applied first, it would be overwritten by an older one)."""
        with self._lock:
            self._draining = True
        while True:
            with self._lock:
                if not self._deferred:
                    self._draining = False  # in the same hold: an input now is applied, not kept
                    return
                what, call, stamp_s = self._deferred.popleft()
            try:
                self._apply(what, call, stamp_s, drained=True)
            except BaseException:
                with self._lock:
                    self._draining = False
                raise

    def _ahead_locked(self, stamp_s: float | None) -> bool:
        """A stamp later than the last report's world time, by less than AHEAD_LIMIT_S (a stamp
        further ahead is not world time: a clock of another kind, taken as it comes)."""
        report = self.driver.report if self.driver is not None else None
        if stamp_s is None or report is None:
            return False
        return report.time_s + SAME_STEP_S < stamp_s <= report.time_s + AHEAD_LIMIT_S

    def _publish_barrier_when_held(self) -> None:
        """(the client's thread) The pending barrier, once the game answered every command sent so far:
        the next step request then finds the game holding the last of them (a step request races
        the command line otherwise, and a lockstep run would depend on which came first)."""
        with self._lock:
            step = self._pending_barrier
            if step is None or not self.client.all_answered:
                return
            self._pending_barrier = None

        def still_waiting(topics: list[str], waited_s: float) -> None:
            self.get_logger().warning(f"vehicle barrier {step} waits {waited_s:.0f} s for acknowledgements "
                                      f"of {', '.join(topics)}")

        if wait_until_acked(self._reports + [self._held], self._stopping, still_waiting):
            self._barrier.publish(UInt64(data=step))

    def _check_vehicle_time(self) -> None:
        time = self.client.time
        if time.disagreement_s > self._disagreement_told:
            self._disagreement_told = time.disagreement_s
            self.get_logger().warning(
                f"the Vehicle Bridge's vehicle time + the Clock offset ({time.offset_s} s) differs from its "
                f"step's world time by up to {time.disagreement_s:.6f} s: the stamps follow the offset")

    def _on_held(self, stamp_s: float | None) -> None:
        """The game holds a command: said on vehicle/held_command once it has answered every command
        sent so far. An earlier answer would let a step request overtake the commands still on their
        way (several kept for a barrier, zero-stamped: each counts for the same world time)."""
        with self._lock:
            if self.client.all_answered:
                self._publish_held_locked(stamp_s)

    # -- forwarding (under the lock) -------------------------------------------------------------

    def _forward_locked(self) -> None:
        assert self.driver is not None
        command = self.driver.command()
        if command is not None:
            self.client.send(command)

    def _publish_held_locked(self, game_stamp_s: float | None = None, force: bool = False) -> None:
        """vehicle/held_command, as the driver says (what sim_control's lockstep rule reads);
        game_stamp_s: the stamp the game just said it holds. Published when it changed, or forced."""
        held = self.driver.held(game_stamp_s) if self.driver is not None else HeldCommand(0.0, "")
        if held == self._held_published and not force:
            return
        self._held_published = held
        msg = Header(frame_id=held.source)
        msg.stamp.sec, msg.stamp.nanosec = stamp_to_sec_nanosec(max(0.0, held.stamp_s))
        self._held.publish(msg)

    # -- ROS inputs (executor) -------------------------------------------------------------------

    def _apply(self, what: str, call: Any, stamp_s: float | None = None, drained: bool = False) -> None:
        """Run one driver input; forward at once; refusals are logged, never raised. In lockstep an
        input that comes during a step request, or stamped for a world time the reports have not
        reached yet (the world is ahead of them: a request is under way), acts after its barrier."""
        limited: list[Any] = []
        try:
            with self._lock:
                driver = self.driver
                if driver is None:
                    raise Ignored(f"{what} ignored: the Vehicle Bridge has not described the vehicle yet "
                                  f"(is 127.0.0.1:{self.config.vehicle_port} up?)")
                waits = self._stepping or self._ahead_locked(stamp_s) or (self._draining and not drained)
                if self.config.lockstep and (waits if not self._playing else self._draining and not drained):
                    self._deferred.append((what, call, stamp_s))  # acts after this request's barrier
                    return
                driver.take_limited()
                try:
                    call(driver)
                finally:
                    limited = driver.take_limited()
                self._forward_locked()
                enabled = driver.dbw_enabled
                now = driver.report.time_s if driver.report is not None else 0.0
        except Refused as exc:
            self._on_refused(what, exc)
            return
        except Unsupported as exc:
            if str(exc) not in self._warned_unsupported:
                self._warned_unsupported.add(str(exc))
                self.get_logger().warning(f"{what} refused: {exc}")
            return
        except Ignored as exc:
            self.get_logger().warning(str(exc), throttle_duration_sec=5.0)
            return
        if limited:
            self._on_limited(what, limited, now)
        self._publish_enabled(enabled)

    def _on_limited(self, what: str, limited: list[Any], now: float) -> None:
        line = self._faults.limited(what, limited, now)
        if line is not None:
            self.get_logger().warning(line)

    def _on_refused(self, what: str, exc: Refused) -> None:
        """Not used: counted, and told on vehicle/refused (what a scenario run names when the
        stack's commands stop counting)."""
        with self._lock:
            report = self.driver.report if self.driver is not None else None
        when = f" at world time {report.time_s:.3f} s" if report is not None else ""
        self._refused_pub.publish(String(data=f"{what}: {exc}{when}"))
        line = self._faults.refused(what, exc)
        if line is not None:
            self.get_logger().warning(line)

    def _publish_diagnostics(self) -> None:
        info = self.info
        status = DiagnosticStatus(name=f"vehicle_bridge: {info.agent if info else self.get_namespace()}",
                                  hardware_id=info.vehicle if info else "")
        faulty, status.message, values = self._faults.summary()
        status.level = DiagnosticStatus.WARN if faulty else DiagnosticStatus.OK
        status.values = [KeyValue(key=key, value=str(n)) for key, n in values]
        array = DiagnosticArray(status=[status])
        array.header.stamp = self.get_clock().now().to_msg()
        self._diagnostics.publish(array)

    def _switch(self, enable: bool) -> None:
        if dbw is None and enable:
            self.get_logger().warning("vehicle/enable ignored: ds_dbw_msgs is not installed (no "
                                      "drive-by-wire topics); drive with vehicle/ackermann_cmd or cmd_vel",
                                      throttle_duration_sec=10.0)
            return

        def call(driver: VehicleDriver) -> None:
            changed = driver.enable() if enable else driver.disable()
            if not enable:  # published if it changed: also an agent awaited after a reset is released
                self._publish_held_locked()
            if changed:
                self.get_logger().info("drive-by-wire enabled: it drives" if enable
                                       else "disabled: throttle released, braking to a stop, steering held")
        self._apply(topics.VEHICLE_ENABLE if enable else topics.VEHICLE_DISABLE, call)

    def _on_steering(self, msg: Any) -> None:
        stamp_s = _stamp(msg.header.stamp)
        self._apply(topics.STEERING_CMD, lambda d: d.steering_cmd(
            stamp_s, msg.cmd_type, msg.cmd, msg.cmd_rate, msg.enable), stamp_s)

    def _on_throttle(self, msg: Any) -> None:
        stamp_s = _stamp(msg.header.stamp)
        self._apply(topics.THROTTLE_CMD, lambda d: d.throttle_cmd(
            stamp_s, msg.cmd_type, msg.cmd, msg.enable), stamp_s)

    def _on_brake(self, msg: Any) -> None:
        stamp_s = _stamp(msg.header.stamp)
        self._apply(topics.BRAKE_CMD, lambda d: d.brake_cmd(
            stamp_s, msg.cmd_type, msg.cmd, msg.enable), stamp_s)

    def _on_gear(self, msg: Any) -> None:
        stamp_s = _stamp(msg.header.stamp)
        self._apply(topics.GEAR_CMD, lambda d: d.gear_cmd(stamp_s, msg.cmd.value), stamp_s)

    def _on_ackermann(self, msg: AckermannDriveStamped) -> None:
        drive = msg.drive
        stamp_s = _stamp(msg.header.stamp)
        self._apply(topics.ACKERMANN_CMD, lambda d: d.ackermann_cmd(
            stamp_s, drive.steering_angle, drive.steering_angle_velocity, drive.speed, drive.acceleration),
            stamp_s)

    def _on_twist(self, twist: Twist, stamp: Any) -> None:
        stamp_s = None if stamp is None else _stamp(stamp)
        self._apply(topics.CMD_VEL, lambda d: d.twist_cmd(stamp_s, twist.linear.x, twist.angular.z), stamp_s)

    # -- reports ---------------------------------------------------------------------------------

    def _publish_enabled(self, enabled: bool) -> None:
        if enabled != self._enabled_published:
            self._enabled_published = enabled
            self._dbw_enabled.publish(Bool(data=enabled))

    def _report_state_locked(self, driver: VehicleDriver) -> dict[str, Any]:
        return {"enabled": driver.dbw_enabled, "steering": _copy(driver.steering),
                "throttle": _copy(driver.throttle), "brake": _copy(driver.brake),
                "gear_request": driver.gear_request,
                "requested_steer_rad": (driver.requested_steer_rad if driver.source is not None
                                        else report_steer(driver))}

    def _publish_reports(self, report: VehicleReport, state: dict[str, Any]) -> None:
        info = self.info
        assert info is not None
        header = Header(frame_id=self.config.frame_id)
        header.stamp.sec, header.stamp.nanosec = stamp_to_sec_nanosec(report.time_s)
        ack = AckermannDriveStamped(header=header)
        ack.drive.steering_angle = report.steer_rad
        ack.drive.speed = report.speed_mps
        self._ackermann_state.publish(ack)
        if dbw is None:
            return
        enabled = state["enabled"]
        steering, throttle, brake = state["steering"], state["throttle"], state["brake"]
        # steering-wheel degrees per road-wheel radian
        wheel_deg_per_rad = math.degrees(1.0) * info.steering_ratio
        s = dbw.SteeringReport(header=header)
        s.steering_wheel_angle = report.steer_rad * wheel_deg_per_rad
        s.cmd = state["requested_steer_rad"] * wheel_deg_per_rad  # as asked; the angle is as applied
        s.cmd_type = STEER_CMD_ANGLE
        s.limit_value = info.max_steer_rad * wheel_deg_per_rad
        s.limiting_value = abs(state["requested_steer_rad"]) > info.max_steer_rad + 1e-9
        s.ready = True
        s.enabled = enabled and steering.engaged
        s.timeout = steering.timeout
        self._steering_report.publish(s)
        self._throttle_report.publish(_pedal_report(dbw.ThrottleReport(header=header), throttle, enabled,
                                                    report.throttle))
        b = _pedal_report(dbw.BrakeReport(header=header), brake, enabled, report.brake)
        b.brake_available_full = True
        self._brake_report.publish(b)
        g = dbw.GearReport(header=header)
        g.gear.value = GEAR_VALUE[report.gear]
        g.cmd.value = GEAR_VALUE.get(state["gear_request"] or "", 0)
        g.ready = True
        self._gear_report.publish(g)
        w = dbw.WheelSpeeds(header=header)
        w.front_left, w.front_right, w.rear_left, w.rear_right = report.wheel_speeds_rad_s
        self._wheel_speeds.publish(w)
        v = dbw.VehicleVelocity(header=header)
        v.vehicle_velocity_brake = v.vehicle_velocity_propulsion = report.speed_mps
        v.dir_src = dbw.VehicleVelocity.DIR_PRNDL
        self._velocity.publish(v)


def _pedal_report(msg: Any, sub: Subsystem, enabled: bool, output: float) -> Any:
    """ThrottleReport and BrakeReport alike: percent commanded (while its subsystem drives) and
    applied, and the subsystem's flags."""
    msg.cmd_type = PEDAL_CMD_PERCENT
    msg.percent_cmd = sub.cmd if enabled and sub.engaged else 0.0  # as asked (may be beyond 100)
    msg.percent_output = 100.0 * output
    msg.ready, msg.enabled, msg.timeout = True, enabled and sub.engaged, sub.timeout
    return msg


def report_steer(driver: VehicleDriver) -> float:
    """The steering the game was asked for, when no source drives (the route, released)."""
    return driver.report.steer_request_rad if driver.report is not None else 0.0


def _stamp(stamp: Any) -> float | None:
    return ros_stamp(stamp.sec, stamp.nanosec)


def _copy(sub: Subsystem) -> Subsystem:
    return replace(sub)


def main(args: list[str] | None = None) -> int:
    return run(VehicleBridge, "vehicle_bridge", args, dds_profile=True)  # short heartbeats: barriers


if __name__ == "__main__":
    sys.exit(main())
