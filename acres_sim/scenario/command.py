"""The scenario runner's command line, built in one place (ROS-free): for the Python API
(scenario/api.py), scenario.launch.py (command_line, from the launch file's arguments) and campaign
runs."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable

PathLike = str | os.PathLike[str]


def runner_args(file: PathLike, *, stack: str = "", sets: Iterable[str] = (), out: PathLike = "",
                report: PathLike = "", junit: PathLike = "", log: PathLike = "", domain: int | None = None,
                until_decided: bool = False, game_args: Iterable[str] = (), quiet: bool = False) -> list[str]:
    """`python -m acres_sim.nodes.scenario_runner FILE ...` with these options."""
    if not str(file):
        raise ValueError("file is empty: give the scenario file")
    args = [sys.executable, "-m", "acres_sim.nodes.scenario_runner", str(file)]
    for flag, value in (("--stack", stack), ("--out", out), ("--report", report), ("--junit", junit),
                        ("--log", log)):
        if str(value):
            args += [flag, str(value)]
    if domain is not None:
        args += ["--domain", str(domain)]
    if until_decided:
        args.append("--until-decided")
    if quiet:
        args.append("--quiet")
    args += [f"--set={item}" for item in sets] + [f"--game-arg={arg}" for arg in game_args]
    return args


def command_line(file: str, stack: str = "", set: str = "", out: str = "", report: str = "", junit: str = "",
                 log: str = "", until_decided: str | bool = False) -> list[str]:
    """The run as a command line from scenario.launch.py's arguments (`set` is KEY=VALUE;KEY=VALUE)."""
    if not file:
        raise ValueError("file is empty: give the scenario file (file:=scenario.yaml)")
    sets = [item for item in (part.strip() for part in set.split(";")) if item]
    decided = str(until_decided).strip().lower() in ("true", "1", "yes", "on")
    return runner_args(file, stack=stack, sets=sets, out=out, report=report, junit=junit, log=log,
                       until_decided=decided)
