"""Stacks as users write them (test/support/user_stacks.py: timers at their own rate on
use_sim_time, commands stamped with now(), callbacks on odometry, Twist, TwistStamped,
drive-by-wire), unchanged apart from remaps, run against a shipped scenario: each passes in lockstep
and in real time with the same verdict, and twice in lockstep bit for bit; one that asks for more
steering than the vehicle has is saturated and passes; one whose commands are refused ends the run
naming the refusal."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

pytest.importorskip("rclpy", reason="rclpy is needed")
pytest.importorskip("ackermann_msgs", reason="ackermann_msgs is not installed")
pytest.importorskip("acres_interfaces.msg", reason="acres_interfaces is not built (see the README)")

from acres_sim.episode.log_file import read_episode  # noqa: E402
from acres_sim.scenario.api import run_scenario  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
DOMAIN = 86  # the runs, one at a time, on a ROS domain of their own
STACKS = REPO / "test" / "support" / "user_stacks.py"
GATE = REPO / "scenarios" / "drive_to_the_gate.yaml"
# 10 s of the gate's 20 (the stacks reach it at about 8.2 s at 3 m/s)
SHORTER = ("duration_s=10", "criteria.0.reach.within_s=10")
REMAPS = {"odom": "/polaris/ground_truth/odom", "ackermann_cmd": "/polaris/vehicle/ackermann_cmd",
          "cmd_vel": "/polaris/cmd_vel", "steering_cmd": "/polaris/vehicle/steering/cmd",
          "throttle_cmd": "/polaris/vehicle/throttle/cmd", "brake_cmd": "/polaris/vehicle/brake/cmd",
          "enable": "/polaris/vehicle/enable", "dbw_enabled": "/polaris/vehicle/dbw_enabled"}


def _stack(style: str, **params) -> str:
    args = [sys.executable, str(STACKS), style, "--ros-args", "-p", "use_sim_time:=true"]
    for key, value in params.items():
        args += ["-p", f"{key}:={value}"]
    for name, topic in REMAPS.items():
        args += ["-r", f"{name}:={topic}"]
    return " ".join(args)


def _run(out: Path, domain: int, stack: str, *sets: str):
    env = dict(os.environ)
    env.update(ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST", PYTHONUNBUFFERED="1")
    result = run_scenario(GATE, stack=stack, out=out, domain=domain, sets=SHORTER + sets,
                          game_args=("--cached",), env=env, timeout_s=240.0)
    print(result.output)
    return result


def _verdicts(result) -> dict[str, bool]:
    return {c["name"]: c["passed"] for c in result.criteria}


# CI runs each style on one distribution: the variants on Kilted, variant_jazzy and drive-by-wire
# (ds_dbw_msgs is not released for Kilted) on Jazzy
STYLES = [
    pytest.param("pursuit", {"rate_hz": 15.0}, (), marks=pytest.mark.variant, id="pursuit-15Hz-timer-now"),
    pytest.param("pursuit", {"rate_hz": 20.0}, (), marks=pytest.mark.variant_jazzy,
                 id="pursuit-20Hz-timer-now"),
    pytest.param("pursuit", {"rate_hz": 50.0}, (), marks=pytest.mark.variant, id="pursuit-50Hz-timer-now"),
    pytest.param("reactive", {}, (), marks=pytest.mark.variant, id="odometry-callbacks"),
    pytest.param("twist", {"rate_hz": 10.0}, (), marks=pytest.mark.variant, id="twist-10Hz"),
    pytest.param("twist", {"rate_hz": 20.0, "stamped": "true"}, ("agents.polaris.cmd_vel_stamped=true",),
                 marks=pytest.mark.variant, id="twiststamped-20Hz"),
    pytest.param("dbw", {"rate_hz": 50.0}, (), id="drive-by-wire-50Hz"),
]


@pytest.mark.parametrize("style,params,sets", STYLES)
def test_a_users_stack_passes_in_lockstep_and_real_time_alike_and_twice_bit_for_bit(
        tmp_path, style, params, sets):
    if style == "dbw":
        pytest.importorskip("ds_dbw_msgs", reason="ds_dbw_msgs is not released for this distribution")
    stack = _stack(style, **params)
    first = _run(tmp_path / "lockstep1", DOMAIN, stack, *sets)
    assert first.exit_code == 0, first.output
    accepted = first.report["steps_accepted"]
    assert accepted["clock"] >= 95 and accepted["quiet"] == 0, accepted  # every tick answered at once
    second = _run(tmp_path / "lockstep2", DOMAIN, stack, *sets)
    strip = {"wall_time_s", "first_step_wall_s", "first_command_wall_s", "files"}
    differing = {k: (first.report.get(k), second.report.get(k))
                 for k in (first.report.keys() | second.report.keys()) - strip
                 if first.report.get(k) != second.report.get(k)}
    assert not differing, differing
    logs = [read_episode(r.report["files"]["log"]) for r in (first, second)]
    assert len(logs[0].steps) == len(logs[1].steps) > 1000
    start = logs[0].steps[0].agents["polaris"]["pose"]["position"]  # the log starts where the run does
    assert (start["x"], start["y"]) == (pytest.approx(-10.0, abs=1e-6), pytest.approx(-28.0, abs=1e-6))
    differ = next((a.step for a, b in zip(logs[0].steps, logs[1].steps) if a.agents != b.agents), None)
    assert differ is None, f"the agent states differ from world step {differ} on"
    real_time = _run(tmp_path / "real_time", DOMAIN, stack, "pace=real_time", *sets)
    assert real_time.exit_code == 0, real_time.output
    assert _verdicts(real_time) == _verdicts(first)


@pytest.mark.variant
def test_a_stack_slower_than_the_ticks_runs_on_its_own_period(tmp_path):
    """A 5 Hz timer commands every second tick: the world steps on its command for one period
    (cadence), waits for it at the next, and never deadlocks."""
    result = _run(tmp_path / "run", DOMAIN, _stack("pursuit", rate_hz=5.0))
    assert result.exit_code == 0, result.output
    accepted = result.report["steps_accepted"]
    assert accepted["cadence"] >= 45 and accepted["clock"] >= 45 and accepted["quiet"] <= 2, accepted


def test_more_steering_than_the_vehicle_has_is_applied_at_its_limit(tmp_path):
    """Heading 35 deg off the line with a 2 m look-ahead, the pursuit asks for up to 1.0 rad (the
    Polaris has 0.59): applied at the limit, said in its log, and the run passes."""
    result = _run(tmp_path / "run", DOMAIN, _stack("pursuit", rate_hz=20.0, lookahead_m=2.0),
                  "agents.polaris.pose.yaw_deg=35")
    assert result.exit_code == 0, result.output
    log = (tmp_path / "run" / "vehicle_bridge_polaris.log").read_text()
    assert "vehicle/ackermann_cmd beyond the vehicle's limits" in log, log[-2000:]
    asked = [float(a) for a in re.findall(r"steering_angle (-?[0-9.]+) rad applied as -?0\.593412 rad", log)]
    assert asked and max(map(abs, asked)) > 0.7, log[-2000:]


@pytest.mark.variant_jazzy
def test_a_stack_whose_commands_are_refused_ends_the_run_naming_the_refusal(tmp_path):
    result = _run(tmp_path / "run", DOMAIN, _stack("pursuit", rate_hz=20.0, nan_after_x=-5.0),
                  "stack_timeout_s=2")
    assert result.exit_code == 2 and result.report["status"] == "error", result.output
    reason = result.report["reason"]
    assert "stack_timeout_s" in reason, reason
    assert "refused since: vehicle/ackermann_cmd: steering_angle is nan at world time" in reason, reason
