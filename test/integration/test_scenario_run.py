"""Scenario runs as a user runs them (the runner in a child process through the Python API, each run
on a ROS domain of its own, the stack a separate process): a driver that brakes in time passes the
bale scenario and one that does not fails it with the contact where the bale stands; the JUnit file
is read by colcon's; /sim/task and /sim/contacts are in the log (read with rosbags); two lockstep runs,
one with jittered answers, give the same report and the same agent states; a stack that never
commands, one that falls silent, Ctrl-C and a game that dies end the run as the interface says; and
every shipped scenario is run with a driver that passes it and one that fails it."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("rclpy", reason="rclpy is needed")
pytest.importorskip("ackermann_msgs", reason="ackermann_msgs is not installed")
pytest.importorskip("acres_interfaces.msg", reason="acres_interfaces is not built (see the README)")

from acres_sim.episode.log_file import EpisodeLogError, iter_log_messages, read_episode  # noqa: E402
from acres_sim.game.control_client import ControlClient, ControlRefused  # noqa: E402
from acres_sim.scenario.api import ScenarioRefused, run_scenario  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
DRIVER = REPO / "test" / "support" / "stack_driver.py"
BALE = REPO / "scenarios" / "bale_ahead.yaml"
GAME_ARGS = ("--cached",)  # the criteria need the motion, not the sensors' pictures


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST", PYTHONUNBUFFERED="1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH", "")])))
    return env


def _stack(*args: str) -> str:
    return " ".join([sys.executable, str(DRIVER), *args])


def _run(scenario: Path, out: Path, domain: int, *driver: str, sets: tuple[str, ...] = (), **kwargs):
    return run_scenario(scenario, stack=_stack(*driver), out=out, domain=domain, sets=sets,
                        game_args=GAME_ARGS, env=_env(), timeout_s=240.0, **kwargs)


def _by_name(result) -> dict[str, dict]:
    return {c["name"].split("(")[0]: c for c in result.criteria}


def _logged(path: Path, topic: str) -> list:
    from rosbags.highlevel import AnyReader
    from rosbags.typesys import Stores, get_typestore

    out = []
    with AnyReader([path], default_typestore=get_typestore(Stores.EMPTY)) as reader:
        for connection, _t, raw in reader.messages():
            if connection.topic == topic:
                out.append(reader.deserialize(raw, connection.msgtype))
    return out


def test_a_driver_that_brakes_in_time_passes_and_colcon_reads_its_junit(tmp_path):
    junit = tmp_path / "results" / "bale_ahead.xml"
    junit.parent.mkdir()
    stack_env = tmp_path / "stack_env.txt"
    # the stack as a shell line that notes its environment first
    stack = f"env > {stack_env}; exec " + _stack("--agent", "polaris", "--speed", "3", "--stop-after-m", "8")
    result = run_scenario(BALE, stack=stack, out=tmp_path / "run", domain=60, game_args=GAME_ARGS, env=_env(),
                          timeout_s=240.0, junit=junit)
    print(result.output)
    assert result.exit_code == 0 and result.report["passed"] and result.report["status"] == "passed"
    # the runner's own DDS profile is not handed on: the user's stack gets the user's environment
    assert "PROFILES_FILE=" not in stack_env.read_text() and "PROFILES_FILE" not in "".join(_env())
    assert {c["passed"] for c in result.criteria} == {True}
    gap = _by_name(result)["stop_before"]["value"]
    assert 2.0 <= gap < 9.0  # at rest before the bale (its front started 11.2 m from it)
    read = subprocess.run(["colcon", "test-result", "--test-result-base", str(junit.parent), "--verbose"],
                          capture_output=True, text=True)
    assert read.returncode == 0 and "3 tests, 0 errors, 0 failures, 0 skipped" in read.stdout, read.stdout
    tasks = _logged(Path(result.report["files"]["log"]), "/sim/task")
    assert tasks and tasks[-1].agent == "polaris" and tasks[-1].task == "bale_ahead" and tasks[-1].state == 1
    assert not _logged(Path(result.report["files"]["log"]), "/sim/contacts")


def test_a_driver_that_does_not_brake_fails_at_the_bale_and_the_same_file_gives_the_same_run(tmp_path):
    runs = [_run(BALE, tmp_path / f"run{k}", 61 + k, "--agent", "polaris", "--speed", "3",
                 *(("--jitter-ms", "30") if k else ()), junit=tmp_path / f"run{k}.xml") for k in range(2)]
    first, second = runs
    print(first.output)
    assert first.exit_code == 1 and first.report["status"] == "failed"
    crash = _by_name(first)["no_collision"]
    assert crash["passed"] is False and crash["detail"].startswith("hit bale1 at (3.85, -28.00) at ")
    assert _by_name(first)["stop_before"]["detail"] == "ran into bale1"
    assert _by_name(first)["max_speed_mps"]["passed"] is True
    contacts = _logged(Path(first.report["files"]["log"]), "/sim/contacts")
    where = contacts[0].contacts[0].position
    assert (contacts[0].contacts[0].other, round(where.x, 6), round(where.y, 6)) == ("bale1", 3.85, -28.0)
    assert [t.state for t in _logged(Path(first.report["files"]["log"]), "/sim/task")][-1] == 2  # FAILED
    read = subprocess.run(["colcon", "test-result", "--test-result-base", str(tmp_path), "--verbose"],
                          capture_output=True, text=True)
    assert "stop_before(polaris, entity=bale1, min_distance_m=2.0)" in read.stdout, read.stdout
    # the same file, the same answers (one run's jittered by up to 30 ms each): the same report
    # everything but the wall times (the machine's, not the run's) and the file names
    strip = ("wall_time_s", "first_step_wall_s", "first_command_wall_s", "files")
    keys = (first.report.keys() | second.report.keys()) - set(strip)
    differing = {k: (first.report.get(k), second.report.get(k)) for k in keys
                 if first.report.get(k) != second.report.get(k)}
    assert not differing, differing
    logs = [read_episode(r.report["files"]["log"]) for r in runs]
    assert len(logs[0].steps) == len(logs[1].steps)
    differ = next((a.step for a, b in zip(logs[0].steps, logs[1].steps) if a.agents != b.agents), None)
    assert differ is None, f"the agent states differ from world step {differ} on"  # a short message


@pytest.mark.variant_jazzy
def test_a_stack_that_never_commands_fails_with_no_command(tmp_path):
    result = _run(BALE, tmp_path / "run", 63, "--agent", "polaris", "--never", sets=("start_timeout_s=3",))
    assert result.exit_code == 1
    assert {c["detail"] for c in result.criteria} == {"no command"}


@pytest.mark.variant
def test_a_stack_that_falls_silent_ends_the_run_with_exit_2_never_a_stale_step(tmp_path):
    result = _run(BALE, tmp_path / "run", 64, "--agent", "polaris", "--speed", "2", "--silent-after", "1",
                  sets=("stack_timeout_s=2",))
    assert result.exit_code == 2 and result.report["status"] == "error"
    assert "stack_timeout_s" in result.report["reason"] and "stale" in result.report["reason"]
    # it answered up to 1 s of world time after the states it heard first (the world at 0 s): the
    # world went no further than the tick after, 0.9 s after the first tick (0.2 s of world time)
    assert result.report["world_time_s"] == pytest.approx(0.9, abs=0.11)
    assert read_episode(result.report["files"]["log"]).steps  # the log was finished


def _runner(tmp_path: Path, domain: int, *extra: str) -> subprocess.Popen:
    args = [sys.executable, "-m", "acres_sim.nodes.scenario_runner", str(BALE),
            "--out", str(tmp_path / "run"), "--domain", str(domain), "--game-arg=--cached",
            "--stack", _stack("--agent", "polaris", "--speed", "2"), "--set", "duration_s=60", *extra]
    return subprocess.Popen(args, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _wait_going(path: Path, proc: subprocess.Popen) -> None:
    """Until the run's episode log has its first chunk (about 1 MiB: a few seconds of world time)."""
    deadline = time.monotonic() + 120.0
    while time.monotonic() < deadline and proc.poll() is None:
        if path.exists() and path.stat().st_size > 1 << 20:
            return
        time.sleep(0.2)
    raise AssertionError(f"the run did not get going (exit {proc.poll()})")


@pytest.mark.variant_jazzy
def test_ctrl_c_ends_the_run_with_130_an_interrupted_report_and_a_complete_log(tmp_path):
    proc = _runner(tmp_path, 65)
    _wait_going(tmp_path / "run" / "episode.mcap", proc)
    # while the run lasts, nobody else steps, resets, pauses or plays its world
    game_log = (tmp_path / "run" / "fake_game.log").read_text()
    port = re.search(r"ACRES_SIM_CONTROL_LISTENING port=(\d+)", game_log)
    assert port is not None
    other = ControlClient(int(port.group(1)), timeout_s=10.0)
    for request in ({"op": "step", "steps": 1}, {"op": "reset", "scope": "all"}, {"op": "play"}):
        with pytest.raises(ControlRefused) as locked:
            other.request(request)
        assert locked.value.code == "locked" and "a scenario run steps this world" in str(locked.value)
    assert other.entities() == ["polaris", "bale1"]  # reading it is fine
    other.close()
    proc.send_signal(signal.SIGINT)
    output, _ = proc.communicate(timeout=120)
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert proc.returncode == 130 and report["status"] == "interrupted", output
    # nothing is passed that was not decided before the interrupt (2 m/s never passes the 5 m/s limit)
    assert not any(c["passed"] for c in report["criteria"])
    assert {c["name"]: c["passed"] for c in report["criteria"]}["max_speed_mps(polaris, limit=5.0)"] is None
    assert [t.state for t in _logged(tmp_path / "run" / "episode.mcap", "/sim/task")][-1] == 3  # ABORTED
    log = read_episode(tmp_path / "run" / "episode.mcap")  # complete: both magics, the summary
    assert log.steps and log.end_s > 0.5


@pytest.mark.variant_jazzy
def test_a_game_that_dies_ends_the_run_with_exit_2_and_a_report_that_says_so(tmp_path):
    proc = _runner(tmp_path, 66, "--set", "seed=4242")
    _wait_going(tmp_path / "run" / "episode.mcap", proc)
    subprocess.run(["pkill", "-KILL", "-f", "acres_sim.fake_game .*--seed 4242"], check=True)
    output, _ = proc.communicate(timeout=120)
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert proc.returncode == 2 and report["status"] == "error", output
    assert "fake_game ended" in report["reason"], report["reason"]
    topics = set()  # what a killed game leaves: every chunk it finished, then the end of the file
    with pytest.raises(EpisodeLogError, match="not a complete MCAP file"):
        for topic, _schema, _ns, _data in iter_log_messages(tmp_path / "run" / "episode.mcap"):
            topics.add(topic)
    assert {"/sim/agent_states", "/clock", "/sim/task"} <= topics


@pytest.mark.variant_jazzy
def test_a_runner_killed_outright_leaves_no_process_of_its_session_behind(tmp_path):
    proc = _runner(tmp_path, 76, "--set", "seed=4343")
    _wait_going(tmp_path / "run" / "episode.mcap", proc)
    proc.kill()  # SIGKILL: nothing of the runner's own ending runs
    proc.wait(10)
    deadline = time.monotonic() + 20.0
    while True:
        left = subprocess.run(["pgrep", "-f", "acres_sim.fake_game .*--seed 4343"], capture_output=True,
                              text=True)
        if not left.stdout.strip() or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert not left.stdout.strip(), "the game outlived its runner"


# scenario, the domain, a driver that passes it, one that fails it (CI runs each pair on one
# distribution: variant on Kilted, variant_jazzy on Jazzy)
SHIPPED = [
    pytest.param("person_at_dusk", 67, ["--speed", "3", "--stop-after-m", "9"], ["--speed", "3"],
                 marks=pytest.mark.variant_jazzy, id="person_at_dusk"),
    pytest.param("shifted_lidar", 69, ["--speed", "3", "--stop-after-m", "18"], ["--speed", "0.5"],
                 marks=pytest.mark.variant, id="shifted_lidar"),
    pytest.param("vehicles_crossing", 71, ["--speed", "3", "--wait-s", "5"], ["--speed", "3"],
                 marks=pytest.mark.variant, id="vehicles_crossing"),
    pytest.param("crop_to_spare", 73, ["--speed", "1", "--stop-after-m", "1.5"], ["--speed", "2"],
                 marks=pytest.mark.variant, id="crop_to_spare"),
]


@pytest.mark.parametrize("name,domain,passing,failing", SHIPPED)
def test_each_shipped_scenario_passes_with_one_driver_and_fails_with_another(
        tmp_path, name, domain, passing, failing):
    scenario = REPO / "scenarios" / f"{name}.yaml"
    good = _run(scenario, tmp_path / "good", domain, "--agent", "polaris", *passing)
    bad = _run(scenario, tmp_path / "bad", domain + 1, "--agent", "polaris", *failing)
    print(good.output, bad.output)
    assert good.exit_code == 0, good.output
    assert bad.exit_code == 1 and any(c["passed"] is False for c in bad.criteria), bad.output


@pytest.mark.variant
def test_in_real_time_the_world_plays_through_the_duration_and_is_judged_the_same_way(tmp_path):
    started = time.monotonic()
    result = _run(BALE, tmp_path / "run", 77, "--agent", "polaris", "--speed", "3",
                  "--period-s", str(1 / 120), sets=("pace=real_time",))
    wall = time.monotonic() - started
    print(result.output)
    assert result.report["pace"] == "real_time"
    assert result.report["world_time_s"] == pytest.approx(12.0, abs=0.1)
    assert wall > 12.0  # the world took its time
    crash = _by_name(result)["no_collision"]
    assert result.exit_code == 1 and crash["detail"].startswith("hit bale1 at (3.85, -28.00)")


def test_a_refused_file_raises_with_its_key_before_anything_starts(tmp_path):
    with pytest.raises(ScenarioRefused, match="objects.0.uri"):
        run_scenario(BALE, sets=("objects.0.uri=barn",), out=tmp_path, env=_env(), timeout_s=60.0)
    assert not (tmp_path / "report.json").exists()
