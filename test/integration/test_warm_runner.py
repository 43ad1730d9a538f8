"""A warm runner (`scenario --serve`) keeps its session from run to run and resets it to each run's
scenario: a run on it gives the report and the logged agent states of the same run on a session of
its own, after another scenario (another seed, objects, conditions) ran on the same session. CI runs
the comparison on Jazzy and the others on Kilted (the runner is the same Python on both)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("rclpy", reason="rclpy is needed")
pytest.importorskip("ackermann_msgs", reason="ackermann_msgs is not installed")
pytest.importorskip("acres_interfaces.msg", reason="acres_interfaces is not built (see the README)")

from acres_sim.episode.log_file import read_episode  # noqa: E402
from acres_sim.scenario.api import run_scenario  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
DRIVER = REPO / "test" / "support" / "stack_driver.py"
GAME_ARGS = ("--cached",)
WALL = ("wall_time_s", "first_step_wall_s", "first_command_wall_s", "files")  # the machine's, not the run's


def _env(domain: int) -> dict[str, str]:
    env = dict(os.environ)
    env.update(ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST", PYTHONUNBUFFERED="1", ROS_DOMAIN_ID=str(domain),
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH", "")])))
    return env


def _stack(*args: str) -> str:
    return " ".join([sys.executable, str(DRIVER), "--agent", "polaris", *args])


def _serve(runs: list[dict], domain: int) -> tuple[list[tuple[int, int]], str]:
    """Each run's (exit, more) from one warm runner, and everything it printed."""
    proc = subprocess.Popen([sys.executable, "-m", "acres_sim.nodes.scenario_runner", "--serve", "--quiet",
                             "--domain", str(domain), *[f"--game-arg={a}" for a in GAME_ARGS]],
                            env=_env(domain), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, bufsize=1)
    done, printed = [], []
    assert proc.stdin is not None and proc.stdout is not None
    try:
        for run in runs:
            proc.stdin.write(json.dumps(run) + "\n")
            proc.stdin.flush()
            for line in proc.stdout:
                printed.append(line)
                if line.startswith("ACRES_RUN_DONE "):
                    fields = dict(part.split("=") for part in line.split()[1:])
                    done.append((int(fields["exit"]), int(fields["more"])))
                    break
            else:
                break
        proc.stdin.close()
        printed.append(proc.stdout.read())
        assert proc.wait(60) == 0, "the runner did not end well at the end of its input"
    finally:
        proc.kill()
    return done, "".join(printed)


@pytest.mark.variant_jazzy
def test_a_warm_run_gives_the_report_and_states_of_a_fresh_session(tmp_path):
    person = REPO / "scenarios" / "person_at_dusk.yaml"
    bale = REPO / "scenarios" / "bale_ahead.yaml"
    person_stack = _stack("--speed", "3", "--stop-after-m", "9")
    runs = [
        {"file": str(bale), "out": str(tmp_path / "bale"), "stack": _stack("--speed", "3")},  # a collision
        {"file": str(person), "out": str(tmp_path / "warm"), "stack": person_stack,
         "set": ["duration_s=6"]},
    ]
    done, printed = _serve(runs, 205)
    print(printed)
    assert done == [(1, 1), (0, 1)], done
    fresh = run_scenario(person, stack=person_stack, out=tmp_path / "fresh", domain=206,
                         sets=["duration_s=6"], game_args=GAME_ARGS, env=_env(206), timeout_s=240.0)
    print(fresh.output)
    assert fresh.exit_code == 0
    warm = json.loads((tmp_path / "warm" / "report.json").read_text())
    keys = (warm.keys() | fresh.report.keys()) - set(WALL)
    differing = {k: (warm.get(k), fresh.report.get(k)) for k in keys if warm.get(k) != fresh.report.get(k)}
    assert not differing, differing
    logs = [read_episode(tmp_path / run / "episode.mcap") for run in ("warm", "fresh")]
    assert len(logs[0].steps) == len(logs[1].steps) > 600
    differ = next((a.step for a, b in zip(logs[0].steps, logs[1].steps) if a.agents != b.agents), None)
    assert differ is None, f"the agent states differ from world step {differ} on"
    # one session: the game started before the first run only; each run has its part of its output
    for name in ("fake_game", "sim_bridge_polaris", "vehicle_bridge_polaris", "sim_control", "stack"):
        assert (tmp_path / "warm" / f"{name}.log").exists(), name
    listening = "ACRES_SIM_CONTROL_LISTENING"
    assert listening in (tmp_path / "bale" / "fake_game.log").read_text()
    assert listening not in (tmp_path / "warm" / "fake_game.log").read_text()


@pytest.mark.variant
def test_a_run_that_does_not_fit_the_session_ends_the_warm_runner_and_a_refused_file_does_not(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("acres_scenario: 1\nname: x\n")
    crossing = REPO / "scenarios" / "vehicles_crossing.yaml"
    runs = [
        {"file": str(bad), "out": str(tmp_path / "bad")},
        {"file": str(REPO / "scenarios" / "bale_ahead.yaml"), "out": str(tmp_path / "bale"),
         "stack": _stack("--speed", "3", "--stop-after-m", "8"), "set": ["duration_s=2"]},
        {"file": str(crossing), "out": str(tmp_path / "crossing")},  # two agents: another session
    ]
    done, printed = _serve(runs, 207)
    assert done == [(2, 1), (1, 1), (2, 0)], printed  # refused, a verdict (still moving at 2 s), ended
    assert "differ from the warm session's" in printed
    assert not (tmp_path / "crossing" / "report.json").exists()


@pytest.mark.variant
def test_a_kept_stack_runs_on_through_the_reset_and_gives_each_run_its_verdict(tmp_path):
    """keep_stack: the stack started by the first run drives the next ones (it answers each step's
    states, stamped as they are, so the reset's clock going back leaves it right); each run is judged
    as a fresh one would be, and gets the stack's output of its own time."""
    bale = REPO / "scenarios" / "bale_ahead.yaml"
    stack = f"echo STACK STARTED && exec {_stack('--speed', '3')}"
    runs = [{"file": str(bale), "out": str(tmp_path / f"run{k}"), "stack": stack, "keep_stack": True,
             "set": ["duration_s=4"]} for k in range(3)]
    done, printed = _serve(runs, 208)
    print(printed)
    assert done == [(1, 1)] * 3, done
    reports = [json.loads((tmp_path / f"run{k}" / "report.json").read_text()) for k in range(3)]
    verdicts = [[(c["name"], c["passed"], c["value"]) for c in r["criteria"]] for r in reports]
    assert verdicts[0] == verdicts[1] == verdicts[2]
    assert reports[1]["steps"] == reports[0]["steps"] == 480
    started = ["STACK STARTED" in (tmp_path / f"run{k}" / "stack.log").read_text() for k in range(3)]
    assert started == [True, False, False]  # one stack for the three runs
