"""What the vehicle_bridge node's inputs mean for the vehicle (ROS-free): drive-by-wire, Ackermann
and Twist commands in, one game command (steer request, throttle, brake, gear) out.

One source drives at a time; who drives is one named state (Mode) and a change of it happens only
in `transition`, the table of every event (drive/modes.py):
- drive-by-wire (DBW) from vehicle/enable until vehicle/disable: while it is enabled it drives and
  Ackermann and Twist commands are ignored (with a WARN); while it is disabled its commands are.
- otherwise Ackermann (ACKERMANN) or Twist (CMD_VEL), whichever sent the latest valid command.
- vehicle/disable releases whichever source drives (RELEASED: throttle off, brakes to a stop,
  steering held) until the next command; a reset of the world that puts the vehicle back on its
  route ends every source and disables drive-by-wire (AWAITING while a learner was in command).

Times are world time, the reports' (the sensor data's stamps): the watchdogs count in it, so a
held or stepped world never times a command out. A command's stamp is its header's, or the world
time it arrived at when the header is zero (or there is none): the game is told the stamp of what
it holds, which is how sim_control knows a learner's command is in before it steps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from acres_sim import topics
from acres_sim.drive.modes import SOURCES, UNDER_COMMAND, DriveState, Event, Mode, transition
from acres_sim.drive.speed_control import SpeedController
from acres_sim.channels.vehicle import VehicleCommand, VehicleInfo, VehicleReport

DBW_TIMEOUT_S = 0.1  # Dataspeed's: a subsystem without a command for this long disables itself
STANDSTILL_MPS = 0.05  # slower than this the vehicle counts as stopped (hold, change gear)
STOP_BRAKE = 1.0  # the brake of a release (watchdog, disable) and of a hold at rest

# ds_dbw_msgs 2.x constants (the message definitions' numbers; the core does not import them, and
# test/lint/test_interfaces.py holds them to the package's where it imports).
STEER_CMD_NONE, STEER_CMD_TORQUE, STEER_CMD_ANGLE, STEER_CMD_CURVATURE = 0, 1, 2, 3
STEER_CMD_YAW_RATE, STEER_CMD_SET_OFFSET, STEER_CMD_PERCENT, STEER_CMD_CALIBRATE = 4, 13, 14, 15
STEER_CMD_NAMES = {0: "CMD_NONE", 1: "CMD_TORQUE", 2: "CMD_ANGLE", 3: "CMD_CURVATURE", 4: "CMD_YAW_RATE",
                   13: "CMD_SET_OFFSET", 14: "CMD_PERCENT", 15: "CMD_CALIBRATE"}
PEDAL_CMD_NONE, PEDAL_CMD_PERCENT = 0, 14
THROTTLE_CMD_NAMES = {0: "CMD_NONE", 13: "CMD_PEDAL_RAW", 14: "CMD_PERCENT"}
BRAKE_CMD_NAMES = {0: "CMD_NONE", 1: "CMD_PRESSURE", 2: "CMD_TORQUE", 8: "CMD_ACCEL", 9: "CMD_ACCEL_ACC",
                   10: "CMD_ACCEL_AEB", 13: "CMD_PEDAL_RAW", 14: "CMD_PERCENT"}
GEAR_NONE, GEAR_PARK, GEAR_REVERSE, GEAR_NEUTRAL, GEAR_DRIVE = 0, 1, 2, 3, 4
GEAR_NAMES = {0: "NONE", 1: "PARK", 2: "REVERSE", 3: "NEUTRAL", 4: "DRIVE", 5: "LOW", 6: "MANUAL",
              7: "SPORT", 15: "CALIBRATE"}
GEAR_BY_VALUE = {GEAR_PARK: "park", GEAR_REVERSE: "reverse", GEAR_NEUTRAL: "neutral", GEAR_DRIVE: "drive"}
GEAR_VALUE = {name: value for value, name in GEAR_BY_VALUE.items()}


@dataclass(frozen=True)
class HeldCommand:
    """What vehicle/held_command says (sim_control's lockstep rule): the stamp of the command the
    vehicle holds and the source that drives; "" when nothing is under command, HELD_AWAITING while
    the next command is awaited."""

    stamp_s: float
    source: str


class Refused(ValueError):
    """Bad input (NaN, infinity, an unknown enum): not used, and it does not refresh the watchdog.
    `kind` names the field and the fault, for rate-limited logging."""

    def __init__(self, message: str, kind: str = ""):
        super().__init__(message)
        self.kind = kind or message


class Unsupported(ValueError):
    """A command type this vehicle does not serve (the message names it)."""


class Ignored(ValueError):
    """A valid command that is not used now (drive-by-wire disabled, or another source drives)."""


def _finite(name: str, value: float) -> float:
    value = float(value)
    if not math.isfinite(value):
        raise Refused(f"{name} is {value!r}", f"{name} not finite")
    return value


@dataclass(frozen=True)
class Limited:
    """A finite value beyond what the vehicle can, applied at its limit (as drive-by-wire does)."""

    field: str
    requested: float
    applied: float
    unit: str

    def __str__(self) -> str:
        return f"{self.field} {self.requested:g} {self.unit} applied as {self.applied:g} {self.unit}"


@dataclass
class Subsystem:
    """One drive-by-wire subsystem (steering, throttle, brake) as its report shows it."""

    cmd_type: int = 0
    cmd: float = 0.0  # as sent: steering-wheel degrees, 1/m or percent
    value: float = 0.0  # what it asks of the vehicle: road-wheel rad, or pedal 0..1
    rate: float = 0.0  # steering: road-wheel rad/s, 0 = as fast as the actuator
    stamp: float = 0.0
    arrived: float = 0.0  # world time
    engaged: bool = False  # a command with enable since the system was enabled, not timed out
    timeout: bool = False

    def release(self, timeout: bool = False) -> None:
        """Not driven any more: pedals off (the steering's caller sets where the wheel stays)."""
        self.engaged = False
        self.timeout = timeout
        self.value = 0.0


@dataclass(frozen=True)
class AckermannTarget:
    """An Ackermann (or Twist) command, checked: road-wheel angle, signed speed."""

    stamp: float
    arrived: float
    steer_rad: float
    steer_rate: float  # 0 = as fast as the actuator
    speed: float
    accel: float  # 0 = the controller's own
    timed_out: bool = False  # the watchdog fired: release the throttle and brake to a stop


class VehicleDriver:
    """The node's driving state. Not thread-safe: the node calls it under one lock."""

    def __init__(self, info: VehicleInfo, command_timeout_s: float, speed_kp: float, speed_ki: float):
        self.info = info
        self.command_timeout_s = command_timeout_s
        self.controller = SpeedController(speed_kp, speed_ki)
        self.report: VehicleReport | None = None
        self.state = DriveState()
        self.steering, self.throttle, self.brake = Subsystem(), Subsystem(), Subsystem()
        self.gear_request: str | None = None
        self._enabled_at = 0.0
        self._target: AckermannTarget | None = None
        self._released_at = 0.0
        self._steer = 0.0  # the steering asked now (ramped)
        self._last_compute: float | None = None
        self.limited: list[Limited] = []  # the current input's saturated fields
        self.requested_steer_rad = 0.0  # the road-wheel angle the driving source asked, before its limit

    def _limit(self, name: str, value: float, low: float, high: float, unit: str) -> float:
        """A finite value held to low..high; beyond them it is applied at the limit and noted in
        self.limited (the command's, taken by the caller after each input)."""
        value = _finite(name, value)
        applied = min(high, max(low, value))
        if applied != value:
            self.limited.append(Limited(name, value, applied, unit))
        return applied

    def take_limited(self) -> list[Limited]:
        """What the last input asked beyond the vehicle's limits (then forgotten)."""
        limited, self.limited = self.limited, []
        return limited

    def _on(self, event: Event) -> bool:
        """Take an event; True when it changed the state."""
        before = self.state
        self.state = transition(before, event)
        return self.state != before

    # -- who drives --------------------------------------------------------------------------------

    @property
    def mode(self) -> Mode:
        return self.state.mode

    @property
    def source(self) -> str | None:
        """"dbw", "ackermann", "cmd_vel", or None (nothing drives: the route, released, awaiting)."""
        return self.mode.value if self.mode in SOURCES else None

    @property
    def dbw_enabled(self) -> bool:
        return self.mode is Mode.DBW

    def held(self, game_stamp_s: float | None = None) -> HeldCommand:
        """What vehicle/held_command says now; game_stamp_s: the stamp the game said it holds."""
        mode = self.mode
        if mode not in UNDER_COMMAND:
            return HeldCommand(game_stamp_s or 0.0, "")
        if mode is Mode.AWAITING or self.state.stale:
            return HeldCommand(game_stamp_s or 0.0, topics.HELD_AWAITING)
        stamp = self._command_stamp() if game_stamp_s is None else game_stamp_s
        return HeldCommand(stamp or 0.0, mode.value)

    @property
    def now(self) -> float:
        if self.report is None:
            raise Ignored("no report from the vehicle yet (is the Vehicle Bridge connected?)")
        return self.report.time_s

    def _stamp(self, stamp: float | None) -> float:
        return self.now if stamp is None or stamp == 0.0 else _finite("header.stamp", stamp)

    # -- drive-by-wire -----------------------------------------------------------------------------

    def enable(self) -> bool:
        """True when this changed something."""
        now = self.now
        if not self._on(Event.ENABLE):
            return False
        self._enabled_at = now
        self._target = None
        for sub in (self.steering, self.throttle, self.brake):
            sub.release()
        self.steering.value = self._steer = self.report.steer_rad if self.report is not None else 0.0
        self.gear_request = None
        self.controller.reset()
        return True

    def disable(self) -> bool:
        """Drive-by-wire off, and whichever source drives is released (brakes to a stop)."""
        now = self.now
        driving = self.mode in SOURCES
        self._on(Event.DISABLE)
        if driving:
            self._released_at = now
            self._steer = self.report.steer_request_rad if self.report is not None else 0.0
        return driving

    def _dbw_ready(self, what: str) -> float:
        now = self.now
        if not self.dbw_enabled:
            raise Ignored(f"{what} ignored: drive-by-wire is disabled (publish std_msgs/msg/Empty on "
                          f"{topics.VEHICLE_ENABLE})")
        return now

    def steering_cmd(self, stamp: float | None, cmd_type: int, cmd: float, cmd_rate: float,
                     enable: bool) -> None:
        if cmd_type not in STEER_CMD_NAMES:
            raise Refused(f"steering cmd_type {cmd_type} is not a SteeringCmd constant")
        if cmd_type not in (STEER_CMD_NONE, STEER_CMD_ANGLE, STEER_CMD_CURVATURE, STEER_CMD_PERCENT):
            raise Unsupported(f"SteeringCmd {STEER_CMD_NAMES[cmd_type]} is not served (CMD_ANGLE, "
                              "CMD_CURVATURE and CMD_PERCENT are)")
        info = self.info
        limit_deg = math.degrees(info.max_steer_rad) * info.steering_ratio
        cmd = _finite("steering cmd", cmd)
        if cmd_type == STEER_CMD_ANGLE:
            requested = math.radians(cmd) / info.steering_ratio
            wheel_deg = self._limit("steering cmd", cmd, -limit_deg, limit_deg, "deg")
            angle = math.radians(wheel_deg) / info.steering_ratio
        elif cmd_type == STEER_CMD_CURVATURE:
            limit_k = math.tan(info.max_steer_rad) / info.wheelbase_m
            requested = math.atan(info.wheelbase_m * cmd)
            angle = math.atan(info.wheelbase_m * self._limit("steering cmd", cmd, -limit_k, limit_k, "1/m"))
        elif cmd_type == STEER_CMD_PERCENT:
            requested = cmd / 100.0 * info.max_steer_rad
            angle = self._limit("steering cmd", cmd, -100.0, 100.0, "%") / 100.0 * info.max_steer_rad
        else:
            requested = angle = 0.0
        rate_deg = self._limit("steering cmd_rate", cmd_rate, 0.0, 1e4, "deg/s")
        stamp_s = self._stamp(stamp)
        now = self._dbw_ready(topics.STEERING_CMD)
        self._on(Event.DBW_COMMAND)
        sub = self.steering
        sub.cmd_type, sub.cmd, sub.stamp, sub.arrived, sub.timeout = cmd_type, float(cmd), stamp_s, now, False
        sub.rate = math.radians(rate_deg) / info.steering_ratio
        sub.engaged = bool(enable) and cmd_type != STEER_CMD_NONE
        if sub.engaged:
            sub.value, self.requested_steer_rad = angle, requested
        elif self.report is not None:
            sub.value = self.report.steer_rad  # not steered: the wheel stays where it is

    def _pedal_cmd(self, sub: Subsystem, what: str, topic: str, names: dict[int, str],
                   stamp: float | None, cmd_type: int, cmd: float, enable: bool) -> None:
        if cmd_type not in names:
            raise Refused(f"{what} cmd_type {cmd_type} is not a constant of its message")
        if cmd_type not in (PEDAL_CMD_NONE, PEDAL_CMD_PERCENT):
            raise Unsupported(f"{what} {names[cmd_type]} is not served (CMD_PERCENT is)")
        percent = self._limit(f"{what} cmd", cmd, 0.0, 100.0, "%") if cmd_type == PEDAL_CMD_PERCENT else 0.0
        stamp_s = self._stamp(stamp)
        now = self._dbw_ready(topic)
        self._on(Event.DBW_COMMAND)
        sub.cmd_type, sub.cmd, sub.stamp, sub.arrived, sub.timeout = cmd_type, float(cmd), stamp_s, now, False
        sub.engaged = bool(enable) and cmd_type == PEDAL_CMD_PERCENT
        sub.value = percent / 100.0 if sub.engaged else 0.0

    def throttle_cmd(self, stamp: float | None, cmd_type: int, cmd: float, enable: bool) -> None:
        self._pedal_cmd(self.throttle, "throttle", topics.THROTTLE_CMD, THROTTLE_CMD_NAMES, stamp, cmd_type,
                        cmd, enable)

    def brake_cmd(self, stamp: float | None, cmd_type: int, cmd: float, enable: bool) -> None:
        self._pedal_cmd(self.brake, "brake", topics.BRAKE_CMD, BRAKE_CMD_NAMES, stamp, cmd_type, cmd,
                        enable)

    def gear_cmd(self, stamp: float | None, gear: int) -> None:
        if gear not in GEAR_NAMES:
            raise Refused(f"gear {gear} is not a ds_dbw_msgs/Gear constant")
        if gear != GEAR_NONE and gear not in GEAR_BY_VALUE:
            raise Unsupported(f"gear {GEAR_NAMES[gear]} is not served (PARK, REVERSE, NEUTRAL, DRIVE are)")
        self._stamp(stamp)
        self._dbw_ready(topics.GEAR_CMD)
        if gear != GEAR_NONE:
            self.gear_request = GEAR_BY_VALUE[gear]

    # -- Ackermann and Twist -----------------------------------------------------------------------

    def ackermann_cmd(self, stamp: float | None, steer_rad: float, steer_rate: float, speed: float,
                      accel: float) -> None:
        info = self.info
        requested = _finite("steering_angle", steer_rad)
        steer = self._limit("steering_angle", requested, -info.max_steer_rad, info.max_steer_rad, "rad")
        rate = self._limit("steering_angle_velocity", abs(_finite("steering_angle_velocity", steer_rate)),
                           0.0, 1e3, "rad/s")
        v = self._limit("speed", speed, -info.max_reverse_mps, info.max_speed_mps, "m/s")
        a = self._limit("acceleration", abs(_finite("acceleration", accel)), 0.0, 100.0, "m/s^2")
        self._take_target(Event.ACKERMANN, stamp, steer, rate, v, a, requested)

    def twist_cmd(self, stamp: float | None, linear_x: float, angular_z: float) -> None:
        """The bicycle model: the road-wheel angle that turns at angular_z at linear_x, clamped to
        the vehicle's limit (never angular_z as an angle); at a stand the angle is held."""
        info = self.info
        v = self._limit("linear.x", linear_x, -info.max_reverse_mps, info.max_speed_mps, "m/s")
        w = _finite("angular.z", angular_z)
        if abs(v) >= STANDSTILL_MPS:
            requested = math.atan(info.wheelbase_m * w / v)
            steer = max(-info.max_steer_rad, min(info.max_steer_rad, requested))
            if steer != requested:  # the yaw rate the vehicle cannot turn at this speed
                self.limited.append(Limited("angular.z", w, v * math.tan(steer) / info.wheelbase_m, "rad/s"))
            self._take_target(Event.CMD_VEL, stamp, steer, 0.0, v, 0.0, requested)
            return
        elif self._target is not None:
            steer = self._target.steer_rad
        else:
            steer = self.report.steer_request_rad if self.report is not None else 0.0
        self._take_target(Event.CMD_VEL, stamp, steer, 0.0, v, 0.0, steer)

    def _take_target(self, event: Event, stamp: float | None, steer: float, rate: float, speed: float,
                     accel: float, requested_steer: float) -> None:
        stamp_s = self._stamp(stamp)
        now = self.now
        if self.dbw_enabled:
            topic = topics.ACKERMANN_CMD if event is Event.ACKERMANN else topics.CMD_VEL
            raise Ignored(f"{topic} ignored: drive-by-wire is enabled and drives (publish "
                          f"{topics.VEHICLE_DISABLE} to drive by Ackermann or Twist)")
        before = self.mode
        self._on(event)
        if self.mode is not before:  # another source, or driving again: start the controller afresh
            self.controller.reset()
            self._steer = self.report.steer_request_rad if self.report is not None else steer
            self._last_compute = None
        self._target = AckermannTarget(stamp_s, now, steer, rate, speed, accel)
        self.requested_steer_rad = requested_steer

    # -- the vehicle's side ------------------------------------------------------------------------

    def on_report(self, report: VehicleReport) -> bool:
        """Take a report; True when the world was reset under the vehicle: the report says so, it
        is back on its route (every source ends), or time went back (the watchdogs restart)."""
        before = self.report
        self.report = report
        now = report.time_s
        # Back on its route (a STATE or ALL reset; also when no step ran since the command), or the
        # clock went back (TIME): what was driving ends, or its times start again.
        back_on_route = (report.reset is not None and not report.driven) or (
            before is not None and before.driven and not report.driven)
        if back_on_route:
            self._back_on_route()
            return True
        if before is not None and now < before.time_s - 1e-9:
            self._restart_clock(now)
            return True
        if report.reset is not None:  # a reset that changed nothing here: the next command is awaited
            self._on(Event.RESET_IN_PLACE)
            return True
        for sub in (self.steering, self.throttle, self.brake):
            if sub.engaged and now - sub.arrived > DBW_TIMEOUT_S + 1e-9:
                sub.release(timeout=True)
                if sub is self.steering:
                    sub.value = report.steer_rad
        target = self._target
        late = target is not None and now - target.arrived > self.command_timeout_s + 1e-9
        if late and target is not None and not target.timed_out:
            self._target = replace(target, timed_out=True)
        return False

    def _restart_clock(self, now: float) -> None:
        """A TIME reset: the vehicle goes on under what it holds; the watchdogs count from now, and
        the next command is awaited (the stamps held are from the old clock)."""
        for sub in (self.steering, self.throttle, self.brake):
            sub.arrived = sub.stamp = now
        if self._target is not None:
            self._target = replace(self._target, arrived=now, stamp=now)
        self._enabled_at = self._released_at = now
        self._last_compute = None
        self._on(Event.CLOCK_BACK)

    def _back_on_route(self) -> None:
        self._on(Event.BACK_ON_ROUTE)
        for sub in (self.steering, self.throttle, self.brake):
            sub.release()
        self.gear_request = None
        self._target = None
        self.controller.reset()
        self._last_compute = None

    def _command_stamp(self) -> float | None:
        """The stamp the command to forward carries: the oldest of the engaged drive-by-wire
        subsystems' (all of a learner's commands are in), else the source's own."""
        mode = self.mode
        if mode is Mode.DBW:
            engaged = [sub.stamp for sub in (self.steering, self.throttle, self.brake) if sub.engaged]
            return min(engaged) if engaged else self._enabled_at
        if mode in SOURCES and self._target is not None:
            return self._target.stamp
        if mode is Mode.RELEASED:
            return self._released_at
        return None

    def command(self) -> VehicleCommand | None:
        """What the game should hold from now on; None while nothing drives yet (the vehicle
        then drives its route). Advances the speed controller by the world time since the last
        call (0 when called twice at one report: the same answer)."""
        report = self.report
        if report is None:
            return None
        mode = self.mode
        if mode not in (*SOURCES, Mode.RELEASED):
            return None
        now = report.time_s
        dt = 0.0 if self._last_compute is None else max(0.0, now - self._last_compute)
        self._last_compute = now
        stamp = self._command_stamp()
        if mode is Mode.RELEASED:  # brake to a stop, steering held
            return VehicleCommand(self._steer, 0.0, STOP_BRAKE, report.gear, stamp_s=stamp)
        if mode is Mode.DBW:
            return self._dbw_command(report, stamp, dt)
        return self._ackermann_command(report, stamp, dt)

    def _ramp_steer(self, target_rad: float, rate: float, dt: float) -> float:
        """The steering asked now: toward target_rad at `rate` rad/s (0: at once)."""
        if rate > 0.0:
            step = rate * dt
            self._steer += max(-step, min(step, target_rad - self._steer))
        else:
            self._steer = target_rad
        return self._steer

    def _dbw_command(self, report: VehicleReport, stamp: float | None, dt: float) -> VehicleCommand:
        steering = self.steering
        self._ramp_steer(steering.value, steering.rate if steering.engaged else 0.0, dt)
        gear = self.gear_request or report.gear
        return VehicleCommand(self._steer, self.throttle.value, self.brake.value, gear, stamp_s=stamp)

    def _ackermann_command(self, report: VehicleReport, stamp: float | None, dt: float) -> VehicleCommand:
        target = self._target
        assert target is not None
        self._ramp_steer(target.steer_rad, target.steer_rate, dt)
        speed = report.speed_mps
        if target.timed_out:  # release the pedals and brake to a stop, steering held
            self.controller.reset()
            return VehicleCommand(self._steer, 0.0, STOP_BRAKE, report.gear, stamp_s=stamp)
        if target.speed > 0.0:
            gear = "drive"
        elif target.speed < 0.0:
            gear = "reverse"
        else:
            gear = report.gear if report.gear in ("drive", "reverse") else "drive"
        direction = -1.0 if gear == "reverse" else 1.0
        moving_against = speed * direction < -STANDSTILL_MPS
        if (gear != report.gear and abs(speed) >= STANDSTILL_MPS) or moving_against:
            self.controller.reset()  # stop first: the gear changes at standstill
            return VehicleCommand(self._steer, 0.0, STOP_BRAKE, gear, stamp_s=stamp)
        magnitude = abs(target.speed)
        if magnitude == 0.0 and abs(speed) < STANDSTILL_MPS:
            self.controller.reset()
            return VehicleCommand(self._steer, 0.0, STOP_BRAKE, gear, stamp_s=stamp)  # hold at rest
        throttle, brake = self.controller.pedals(self.info.model, magnitude, target.accel,
                                                 max(0.0, speed * direction), dt)
        return VehicleCommand(self._steer, throttle, brake, gear, stamp_s=stamp)


def ros_stamp(sec: int, nanosec: int) -> float | None:
    """A header stamp as seconds; None for the zero stamp (then the arrival time counts)."""
    if sec == 0 and nanosec == 0:
        return None
    return sec + nanosec * 1e-9
