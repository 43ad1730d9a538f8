"""`scenario --serve`: a warm runner, for campaigns. Runs come one after another, each a line of
standard input holding a JSON object:

    {"file": "sweep.yaml", "out": "DIR", "stack": "CMD", "set": ["KEY=VALUE", ...], "until_decided": false}

(`log`, `report` and `junit` as the runner's options; the ROS domain, the game's arguments and
--quiet are the warm runner's own). The session (the fake game, the bridges, sim_control and this
runner's ROS node) starts with the first run and is kept while every run fits it (the same agents,
vehicles, pace and game arguments: scenario/session.py's session_key) and ends with a verdict; in
between, the world is reset to the next run's scenario (acres_sim/nodes/runner_world.py), and each
run's directory gets its part of every process's output. The stack is started for each run.

After each run a line `ACRES_RUN_DONE exit=N more=1|0`: more=0 says the runner ends after it (its
session ended: a run that ended in an error or was interrupted, or one that does not fit); the next
run then goes to a new runner. End of input, SIGINT or SIGTERM between runs end the session and the
runner.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any

from acres_sim.nodes.runner_world import RunnerWorld
from acres_sim.nodes.scenario_runner import ScenarioRun, leave, log_exists, parse_args
from acres_sim.scenario.scenario_file import ScenarioError, load

DONE = "ACRES_RUN_DONE"
EXIT_REFUSED = 2


def serve(args: argparse.Namespace) -> int:
    env = dict(os.environ)
    if args.domain is not None:
        env["ROS_DOMAIN_ID"] = os.environ["ROS_DOMAIN_ID"] = str(args.domain)
    session_dir = Path(tempfile.mkdtemp(prefix="acres_warm_session_"))
    world: RunnerWorld | None = None
    opened = False  # a session was started: this process's ROS is up and cannot be started again
    code = ended = 0  # the last run's; the runner's own (130: interrupted)

    def interrupted(_signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupted)  # between runs, as SIGINT
    try:
        for line in sys.stdin:
            if not line.strip():
                continue
            run = _run_of(line, args)
            if isinstance(run, str):
                print(f"scenario: refused: {run}", file=sys.stderr, flush=True)
                code = EXIT_REFUSED
            elif world is not None and not world.fits(run.scenario, args.game_arg):
                print("scenario: refused: this run's agents, vehicles, pace or game arguments differ from "
                      "the warm session's: run it on a new runner", file=sys.stderr, flush=True)
                code = EXIT_REFUSED
                print(f"{DONE} exit={code} more=0", flush=True)
                break
            else:
                if world is None:
                    world = RunnerWorld(run.scenario, session_dir, env, args.game_arg)
                opened = True
                code = run.execute(world, keep=True)
                world = run.world
            more = world is not None or not opened
            print(f"{DONE} exit={code} more={int(more)}", flush=True)
            if not more:
                break
    except KeyboardInterrupt:
        ended = 130
    finally:
        if world is not None:
            world.stop_feed()
            world.session.stop()
        shutil.rmtree(session_dir, ignore_errors=True)
    if opened:
        leave(ended)
    return ended


def _run_of(line: str, args: argparse.Namespace) -> ScenarioRun | str:
    """The run a request asks for, or why it is refused."""
    try:
        request = json.loads(line)
        if not isinstance(request, dict) or not isinstance(request.get("file"), str):
            return f"a run is a JSON object with a scenario file (\"file\"), got {line.strip()[:200]}"
        argv = [request["file"]]
        for key in ("out", "stack", "log", "report", "junit"):
            if request.get(key):
                argv += [f"--{key}", str(request[key])]
        argv += [f"--set={item}" for item in request.get("set", [])]
        if request.get("until_decided"):
            argv.append("--until-decided")
        run_args = parse_args(argv)
    except (ValueError, TypeError) as exc:
        return f"a run's line could not be read: {exc}"
    except SystemExit:
        return f"a run's options could not be read: {line.strip()[:200]}"
    run_args.domain, run_args.game_arg, run_args.quiet = args.domain, args.game_arg, args.quiet
    try:
        scenario = load(run_args.file, run_args.set)
    except ScenarioError as exc:
        return str(exc)
    run = ScenarioRun(scenario, run_args)
    if Path(run.log_path).exists():
        return log_exists(run.log_path).removeprefix("scenario: refused: ")
    return run
