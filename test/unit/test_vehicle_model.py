"""The fake game's vehicle model and its driven track, against the model's own parameters: steering
lag and rate limit, the bicycle geometry, the powertrain's steady speeds, braking, gear changes only
at standstill, the grade, determinism; and the Hermite track the sensors follow."""

from __future__ import annotations

import math

import pytest

from acres_sim.fake_game.simulation.vehicle_model import (
    GRAVITY,
    VEHICLE_PARAMS,
    VehicleCommand,
    VehicleModel,
    VehicleState,
)
from acres_sim.fake_game.world.motion import DriveKnot, DrivenMotion

DT = 1.0 / 120.0
POLARIS = VEHICLE_PARAMS["polaris"]


def _run(model: VehicleModel, command: VehicleCommand, seconds: float,
         grade: float = 0.0) -> list[VehicleState]:
    return [model.step(command, DT, grade) for _ in range(round(seconds / DT))]


@pytest.mark.parametrize("vehicle", sorted(VEHICLE_PARAMS))
@pytest.mark.parametrize("throttle", [0.3, 0.6, 1.0])
def test_throttle_settles_at_the_speed_where_drive_meets_rolling_and_drag(vehicle, throttle):
    p = VEHICLE_PARAMS[vehicle]
    model = VehicleModel(p, VehicleState(0.0, 0.0, 0.0))
    states = _run(model, VehicleCommand(throttle=throttle), 60.0)
    expected = math.sqrt((throttle * p.drive_force_n - p.rolling_resistance * p.mass_kg * GRAVITY)
                         / p.drag_n_s2_m2)
    assert states[-1].speed_mps == pytest.approx(min(expected, p.max_speed_mps), rel=2e-3)
    speeds = [s.speed_mps for s in states]
    assert all(b >= a - 1e-12 for a, b in zip(speeds, speeds[1:]))  # no overshoot on the level


def test_steering_follows_the_request_with_its_lag_and_rate_limit():
    model = VehicleModel(POLARIS, VehicleState(0.0, 0.0, 0.0))
    request = 0.3  # rad, within the limit
    states = _run(model, VehicleCommand(steer_request_rad=request), 3.0)
    angles = [s.steer_rad for s in states]
    steps = [b - a for a, b in zip([0.0] + angles, angles)]
    assert max(steps) <= POLARIS.steer_rate_rad_s * DT + 1e-12  # never faster than the actuator
    assert max(steps) == pytest.approx(POLARIS.steer_rate_rad_s * DT)  # and rate-limited at first
    rise = next(i for i, a in enumerate(angles) if a >= 0.9 * request) * DT
    # Rate-limited the whole way: 0.9 * request / rate (a first-order lag alone would be faster).
    assert rise == pytest.approx(0.9 * request / POLARIS.steer_rate_rad_s, abs=2 * DT)
    assert angles[-1] == pytest.approx(request, abs=1e-4)
    assert max(angles) <= request + 1e-12  # no overshoot


def test_steering_is_clamped_to_the_vehicle_limit():
    model = VehicleModel(POLARIS, VehicleState(0.0, 0.0, 0.0))
    states = _run(model, VehicleCommand(steer_request_rad=2.0), 5.0)
    assert states[-1].steer_rad == pytest.approx(POLARIS.max_steer_rad, abs=1e-6)
    assert max(s.steer_rad for s in states) <= POLARIS.max_steer_rad + 1e-12


@pytest.mark.parametrize("speed_throttle,steer", [(0.3, 0.2), (0.6, -0.35), (1.0, 0.1)])
def test_a_steady_command_turns_at_v_tan_delta_over_the_wheelbase(speed_throttle, steer):
    model = VehicleModel(POLARIS, VehicleState(0.0, 0.0, 0.0))
    states = _run(model, VehicleCommand(throttle=speed_throttle, steer_request_rad=steer), 40.0)
    last, before = states[-1], states[-121]
    measured = (last.yaw - before.yaw) / 1.0  # over the last second
    assert measured == pytest.approx(last.speed_mps * math.tan(steer) / POLARIS.wheelbase_m, rel=1e-3)
    # the rear axle goes round a circle of radius wheelbase / tan(delta)
    radius = POLARIS.wheelbase_m / abs(math.tan(steer))
    xs, ys = [s.x for s in states[-2000:]], [s.y for s in states[-2000:]]
    centre_x, centre_y = last.x - radius * math.sin(last.yaw) * math.copysign(1, steer), \
        last.y + radius * math.cos(last.yaw) * math.copysign(1, steer)
    distances = [math.hypot(x - centre_x, y - centre_y) for x, y in zip(xs, ys)]
    assert max(distances) - min(distances) < 0.01 * radius
    assert distances[-1] == pytest.approx(radius, rel=1e-3)


def test_brake_stops_without_reversing_and_holds():
    model = VehicleModel(POLARIS, VehicleState(0.0, 0.0, 0.0, speed_mps=8.0))
    states = _run(model, VehicleCommand(brake=1.0), 3.0)
    speeds = [s.speed_mps for s in states]
    stop = next(i for i, v in enumerate(speeds) if v == 0.0)
    decel = 8.0 / (stop * DT)
    # brake plus rolling plus drag, so a little more than the brake alone
    assert POLARIS.brake_force_n / POLARIS.mass_kg < decel < 1.3 * POLARIS.brake_force_n / POLARIS.mass_kg
    assert all(v == 0.0 for v in speeds[stop:])


def test_a_change_of_direction_waits_for_standstill():
    model = VehicleModel(POLARIS, VehicleState(0.0, 0.0, 0.0, speed_mps=5.0))
    states = _run(model, VehicleCommand(throttle=0.5, gear="reverse"), 10.0)
    speeds = [s.speed_mps for s in states]
    first_reverse = next(i for i, s in enumerate(states) if s.gear == "reverse")
    assert all(s.gear == "drive" and v >= 0.0 for s, v in zip(states[:first_reverse], speeds))
    assert abs(speeds[first_reverse - 1]) < 0.01  # engaged at rest
    assert speeds[-1] < -1.0 and states[-1].direction == -1  # then it backs up
    assert speeds[-1] >= -POLARIS.max_reverse_mps


def test_the_grade_pulls_downhill_and_the_brake_holds():
    slope = 0.2  # 11 deg: steeper than the rolling resistance holds
    rolling = VehicleModel(POLARIS, VehicleState(0.0, 0.0, 0.0))
    assert _run(rolling, VehicleCommand(), 2.0, grade=slope)[-1].speed_mps < -1.0  # rolls back
    held = VehicleModel(POLARIS, VehicleState(0.0, 0.0, 0.0))
    assert _run(held, VehicleCommand(brake=1.0), 2.0, grade=slope)[-1].speed_mps == 0.0
    parked = VehicleModel(POLARIS, VehicleState(0.0, 0.0, 0.0, gear="park"))
    assert _run(parked, VehicleCommand(gear="park"), 2.0, grade=slope)[-1].speed_mps == 0.0
    uphill = VehicleModel(POLARIS, VehicleState(0.0, 0.0, 0.0))
    level = VehicleModel(POLARIS, VehicleState(0.0, 0.0, 0.0))
    assert _run(uphill, VehicleCommand(throttle=0.8), 20.0, grade=0.1)[-1].speed_mps \
        < _run(level, VehicleCommand(throttle=0.8), 20.0)[-1].speed_mps - 1.0


def test_the_same_commands_give_the_same_track_bit_for_bit():
    commands = [VehicleCommand(steer_request_rad=0.4 * math.sin(i / 50.0),
                               throttle=0.5 + 0.4 * math.sin(i / 90.0), brake=0.2 if i % 400 > 350 else 0.0)
                for i in range(2400)]
    tracks = []
    for _ in range(2):
        model = VehicleModel(POLARIS, VehicleState(1.0, 2.0, 0.3))
        tracks.append([model.step(c, DT, 0.01) for c in commands])
    assert tracks[0] == tracks[1]


def test_wheel_speeds_and_rpm_follow_the_motion():
    model = VehicleModel(POLARIS, VehicleState(0.0, 0.0, 0.0, speed_mps=5.0))
    fl, fr, rl, rr = model.wheel_speeds()
    assert fl == fr == rl == rr == pytest.approx(5.0 / POLARIS.wheel_radius_m)
    _run(model, VehicleCommand(throttle=0.4, steer_request_rad=0.3), 5.0)
    fl, fr, rl, rr = model.wheel_speeds()
    assert rr > rl and fr > fl and fl > rl  # a left turn: the outer (right) wheels and the fronts run faster
    v, k = model.state.speed_mps, math.tan(model.state.steer_rad) / POLARIS.wheelbase_m
    assert (rl + rr) / 2 * POLARIS.wheel_radius_m == pytest.approx(v)
    assert rr - rl == pytest.approx(v * k * POLARIS.track_m / POLARIS.wheel_radius_m)
    assert model.rpm() > POLARIS.idle_rpm


@pytest.mark.parametrize("fields,message", [
    ({"throttle": 1.5}, "throttle must be 0..1"), ({"brake": -0.1}, "brake must be 0..1"),
    ({"steer_request_rad": math.nan}, "finite"), ({"throttle": math.inf}, "finite"),
    ({"gear": "overdrive"}, "gear must be one of"),
])
def test_commands_out_of_range_are_refused(fields, message):
    with pytest.raises(ValueError, match=message):
        VehicleCommand(**fields)


def test_the_driven_track_passes_through_its_knots_smoothly_and_goes_on_along_the_arc():
    model = VehicleModel(POLARIS, VehicleState(0.0, 0.0, 0.0, speed_mps=4.0))
    knot = lambda t, s: DriveKnot(t, s.x, s.y, s.yaw, s.speed_mps,  # noqa: E731
                                  s.speed_mps * math.tan(s.steer_rad) / POLARIS.wheelbase_m)
    track = DrivenMotion(knot(0.0, model.state))
    for i in range(1, 241):
        track.add(knot(i * DT, model.step(VehicleCommand(throttle=0.3, steer_request_rad=0.25), DT)))
    state = model.state
    assert track.planar(240 * DT) == pytest.approx((state.x, state.y, state.yaw), abs=1e-12)
    # between knots: next to the chord's midpoint (the step's arc bulges by well under a millimetre)
    a, b = track.planar(239 * DT), track.planar(240 * DT)
    x, y, _yaw = track.planar(239.5 * DT)
    assert math.hypot(x - (a[0] + b[0]) / 2, y - (a[1] + b[1]) / 2) < 1e-3
    # after the last knot it goes on along its arc; before the first it stands
    ahead = track.planar(240 * DT + 0.5)
    rate = state.speed_mps * math.tan(state.steer_rad) / POLARIS.wheelbase_m
    assert ahead[2] == pytest.approx(state.yaw + 0.5 * rate)
    assert track.planar(-1.0) == pytest.approx((0.0, 0.0, 0.0))
    moved = track.shifted(-240 * DT)
    assert moved.planar(0.0) == pytest.approx(track.planar(240 * DT))
    with pytest.raises(ValueError, match="not after"):
        track.add(knot(0.5 * DT, state))
