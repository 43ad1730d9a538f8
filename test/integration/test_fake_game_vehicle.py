"""fake_game's Vehicle Bridge over real sockets, read with the ROS-free client the vehicle_bridge node
uses (acres_sim.game.vehicle_client) and stepped with the control channel's client: the vehicle's
parameters, a report per physics step and a barrier after each step request, the route until the
first command, the commands acting from the next step with the vehicle model's geometry, the
watchdog in real time, resets, determinism, and bad lines refused while the stream goes on."""

from __future__ import annotations

import json
import math
import socket
import time

import pytest
from support.vehicle_channel import step

from acres_sim.channels.vehicle import VehicleCommand, VehicleReport

pytestmark = pytest.mark.ros_free  # no ROS graph nor message: CI runs it on one distribution

DT = 1.0 / 120.0


def test_parameters_once_then_a_report_per_step_and_a_barrier_after_each_request(driven_game):
    _game, control, _client, recorder = driven_game()
    info = recorder.info[0]
    assert (info.agent, info.vehicle, info.physics_hz) == ("polaris", "polaris", 120)
    assert info.wheelbase_m == 2.08 and info.steering_ratio == 15.0 and 0.5 < info.max_steer_rad < 0.7
    for steps in (12, 1, 30):
        step(control, recorder, steps)
    items = recorder.items
    steps_seen = [r.step if isinstance(r, VehicleReport) else ("barrier", r[0]) for r in items]
    # the state at connection (step 0: the world is held), then a report per step
    assert steps_seen == [0, *range(1, 13), ("barrier", 12), 13, ("barrier", 13), *range(14, 44),
                          ("barrier", 43)]
    for report in recorder.reports():
        assert report.time_s == pytest.approx(report.step * DT, abs=1e-12)
        assert not report.driven and report.command_stamp_s is None  # on its route


def test_the_first_command_takes_the_vehicle_off_its_route_from_the_next_step(driven_game):
    _game, control, client, recorder = driven_game()
    step(control, recorder, 120)  # 1 s on the route
    on_route = recorder.reports()[-1]
    assert on_route.speed_mps > 0.0 and not on_route.driven
    steer = 0.25
    assert client.send(VehicleCommand(stamp_s=1.0, steer_request_rad=steer, throttle=0.6, brake=0.0,
                                      gear="drive"))
    time.sleep(0.2)  # the bridge reads it before the next request (in lockstep nothing else moves)
    step(control, recorder, 12 * 40)  # 4 s
    reports = [r for r in recorder.reports() if r.step > 120]
    assert reports[0].driven and reports[0].command_stamp_s == 1.0
    assert reports[0].steer_request_rad == steer and reports[0].throttle == 0.6
    last = reports[-1]
    assert last.steer_rad == pytest.approx(steer, abs=1e-4)
    # the vehicle model's geometry, in its reports and in the ground truth of the control channel
    assert last.yaw_rate == pytest.approx(last.speed_mps * math.tan(steer) / 2.08, rel=0.02)
    state = control.get_state("polaris")
    assert state.time_s == pytest.approx(last.time_s)
    assert state.angular_velocity[2] == pytest.approx(last.yaw_rate, rel=0.05)
    assert math.hypot(*state.linear_velocity[:2]) == pytest.approx(last.speed_mps, rel=0.05)


def test_reset_state_puts_it_back_on_its_route_and_reset_all_repeats_the_same_drive(driven_game):
    _game, control, client, recorder = driven_game()

    def drive() -> tuple[float, ...]:
        for i in range(6):
            client.send(VehicleCommand(stamp_s=i * 0.5, steer_request_rad=0.3 * (-1) ** i, throttle=0.7,
                                       brake=0.0, gear="drive"))
            time.sleep(0.15)
            step(control, recorder, 60)
        state = control.get_state("polaris")
        return (*state.position, *state.orientation)

    first = drive()
    control.reset("all")
    second = drive()
    assert first == second  # bit for bit
    control.reset("state")
    step(control, recorder, 12)
    assert not recorder.reports()[-1].driven  # back on its route until the next command


def test_outside_lockstep_a_silent_client_is_braked_to_a_stop(driven_game):
    _game, _control, client, recorder = driven_game(lockstep=False)
    recorder.wait(lambda r: len(r.reports()) > 60)
    client.send(VehicleCommand(stamp_s=None, steer_request_rad=0.0, throttle=1.0, brake=0.0, gear="drive"))
    recorder.wait(lambda r: r.reports()[-1].driven and r.reports()[-1].throttle == 1.0)
    # then nothing: after the watchdog (0.5 s of wall time) the bridge brakes
    recorder.wait(lambda r: r.reports()[-1].brake == 1.0, timeout_s=5.0)
    braked_at = next(r for r in recorder.reports() if r.driven and r.brake == 1.0)
    accelerating = [r for r in recorder.reports() if r.driven and r.throttle == 1.0]
    assert 0.4 <= braked_at.time_s - accelerating[0].time_s <= 1.5  # real time: about 0.5 s of silence
    recorder.wait(lambda r: r.reports()[-1].speed_mps == 0.0, timeout_s=10.0)


def test_bad_lines_are_refused_and_the_bridge_goes_on(driven_game):
    game, control, client, _recorder = driven_game()
    port = game.vehicle_port("polaris")
    client.stop()  # one client at a time: a raw peer takes its place
    game.wait_line(r"^ACRES_VEHICLE_BRIDGE_DISCONNECTED agent=polaris")
    raw = socket.create_connection(("127.0.0.1", port), timeout=10.0)
    lines = raw.makefile("r")
    assert json.loads(lines.readline())["type"] == "hello"
    now = json.loads(lines.readline())  # then the state the held world is in
    assert now["type"] == "report" and now["vehicle_time_s"] == pytest.approx(now["step"] / 120 + 1234.5)
    for bad in (b"not json\n", b'{"type": "command", "throttle": 2.0}\n', b'{"type": "fly"}\n',
                b'{"type": "command", "gear": "warp"}\n', b"x" * 20000 + b"\n"):
        raw.sendall(bad)
        answer = json.loads(lines.readline())
        assert answer["type"] == "error" and answer["code"] == "bad_request", answer
    raw.sendall(b'{"type": "command", "throttle": 0.5, "stamp_s": 0.25}\n')
    assert json.loads(lines.readline()) == {"type": "held", "stamp_s": 0.25}  # taken: said so
    control.step(3)
    got = [json.loads(lines.readline()) for _ in range(4)]
    assert [g["type"] for g in got] == ["report", "report", "report", "barrier"]
    assert got[0]["driven"] and got[0]["throttle"] == 0.5 and got[0]["command_stamp_s"] == 0.25
    control.reset("state")  # a reset: the state it left, then a barrier, before the answer
    got = [json.loads(lines.readline()) for _ in range(2)]
    assert [g["type"] for g in got] == ["report", "barrier"]
    assert got[0]["reset"] == "state" and not got[0]["driven"] and got[1]["step"] == got[0]["step"]
    raw.close()
