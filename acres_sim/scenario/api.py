"""Run a scenario from Python and get its report: what a package's own tests call, so that `colcon
test` runs a scenario against the package's node and reports its criteria.

    from acres_sim.scenario.api import run_scenario

    def test_my_planner_stops_for_the_bale(tmp_path):
        result = run_scenario("scenarios/bale_ahead.yaml", stack="ros2 run my_pkg planner",
                              out=tmp_path, junit=tmp_path / "bale_ahead.xml")
        assert result.passed, result.summary

The run is `ros2 run acres_sim scenario` in a child process (its own ROS domain when `domain` is
given), so a test process with its own rclpy context is not disturbed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acres_sim.scenario.command import runner_args

INTERRUPTED_WAIT_S = 120.0  # an interrupted run ends within this, or it is killed


class ScenarioRefused(ValueError):
    """The scenario file was refused (exit 2 before anything started): the message names the key."""


@dataclass
class ScenarioResult:
    exit_code: int
    report: dict[str, Any] = field(default_factory=dict)
    output: str = ""  # what the run printed (the summary last)

    @property
    def passed(self) -> bool:
        return self.exit_code == 0

    @property
    def criteria(self) -> list[dict[str, Any]]:
        return list(self.report.get("criteria", []))

    @property
    def summary(self) -> str:
        return self.output


def run_scenario(path: str | os.PathLike[str], *, stack: str = "", sets: Iterable[str] = (),
                 out: str | os.PathLike[str] = "", junit: str | os.PathLike[str] = "",
                 log: str | os.PathLike[str] = "", domain: int | None = None, until_decided: bool = False,
                 game_args: Iterable[str] = (), timeout_s: float | None = None,
                 env: dict[str, str] | None = None) -> ScenarioResult:
    """Run the scenario file (with `--set` overrides) and return its result; ScenarioRefused when the
    file is refused. `timeout_s`: wall time after which the run is interrupted (its report then says
    so; a run still going INTERRUPTED_WAIT_S later is killed, and its output ends with its threads'
    stacks)."""
    report_path = Path(out) / "report.json" if out else None
    args = runner_args(path, stack=stack, sets=sets, out=out, report=report_path or "", junit=junit, log=log,
                       domain=domain, until_decided=until_decided, game_args=game_args, quiet=True)
    proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        output, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)  # the run writes its report, marked interrupted
        try:
            output, _ = proc.communicate(timeout=INTERRUPTED_WAIT_S)
        except subprocess.TimeoutExpired:  # its output holds the stacks of what held it (the runner's)
            proc.kill()
            output, _ = proc.communicate()
    if report_path is None:
        report_path = _report_named_in(output)
    report = json.loads(report_path.read_text()) if report_path is not None and report_path.is_file() else {}
    if proc.returncode == 2 and not report:
        raise ScenarioRefused(output.strip())
    return ScenarioResult(proc.returncode, report, output)


def _report_named_in(output: str) -> Path | None:
    for line in output.splitlines():
        if line.strip().startswith("report: "):
            return Path(line.strip()[len("report: "):])
    return None
