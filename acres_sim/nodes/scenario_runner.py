"""`ros2 run acres_sim scenario FILE`: a scenario run from the file to its verdict (the run itself:
scenario_run.py).

`scenario --serve`, a warm runner (for campaigns), takes runs one after another, each a line of
standard input: a JSON object with `file` and the options `out`, `stack`, `set` (a list),
`until_decided`, `log`, `report`, `junit`, and `keep_stack` (the stack runs on into the next run of
the same command line, through the reset) (its ROS domain, game arguments and --quiet are its own).
Its session starts with the first run and is kept while the runs fit it (scenario/session.py's
session_key) and end with a verdict; the world is reset to each run's scenario in between
(runner_world.py), and each run's directory gets its part of every process's output. After each
run: `ACRES_RUN_DONE exit=N more=1|0` (more=0: its session ended, and so does the runner).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from acres_sim.nodes.runner_world import RunnerWorld
from acres_sim.nodes import scenario_run
from acres_sim.nodes.scenario_run import ScenarioRun
from acres_sim.scenario.scenario_file import ScenarioError, load
from acres_sim.work_dirs import WorkDir

__all__ = ["ScenarioRun", "load", "main", "parse_args", "scenario_run", "serve"]

DONE = "ACRES_RUN_DONE"  # a warm runner's line after each run
EXIT_REFUSED = 2


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="scenario",
                                description="Run a scenario file against a stack and judge it.")
    p.add_argument("file", nargs="?", default="", help="the scenario (YAML)")
    p.add_argument("--check", action="store_true", help="check the file and exit (0: it would run)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a key for this run (dotted: conditions.dust=0.5, objects.bale1.pose.x=4)")
    p.add_argument("--stack", default="", metavar="CMD",
                   help="start this command line (the stack) in the run's ROS domain once the session is up")
    p.add_argument("--out", default="", metavar="DIR",
                   help="the run's directory (default: a new temporary one)")
    p.add_argument("--report", default="", metavar="OUT.json", help="the report (default: DIR/report.json)")
    p.add_argument("--junit", default="", metavar="OUT.xml",
                   help="also a JUnit XML, a test case per criterion")
    p.add_argument("--log", default="", metavar="OUT.mcap",
                   help="the episode log (default: DIR/episode.mcap)")
    p.add_argument("--domain", type=int, default=None, help="the run's ROS_DOMAIN_ID (default: this one's)")
    p.add_argument("--until-decided", action="store_true", help="end as soon as every criterion is decided")
    p.add_argument("--game-arg", action="append", default=[], metavar="ARG",
                   help="an argument for the fake game, e.g. --game-arg=--cached (repeatable)")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.add_argument("--serve", action="store_true",
                   help="(a warm runner) runs one after another on one session, each asked for on a line of "
                        "standard input (JSON: file, out, stack, set, until_decided, keep_stack); no FILE")
    args = p.parse_args(argv)
    if bool(args.file) == args.serve:
        p.error("give a scenario FILE, or --serve without one")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.serve:
        return serve(args)
    try:
        scenario = load(args.file, args.set)
    except ScenarioError as exc:
        print(f"scenario: refused: {exc}", file=sys.stderr)
        return 2
    if args.check:
        print(f"{args.file}: ok: {scenario.name}, {len(scenario.agents)} agents, "
              f"{len(scenario.objects)} objects, "
              f"{len(scenario.events)} events, {len(scenario.criteria)} criteria, {scenario.duration_s:g} s "
              f"{scenario.pace}")
        return 0
    run = ScenarioRun(scenario, args)
    if Path(run.log_path).exists():
        print(log_exists(run.log_path), file=sys.stderr)
        return 2
    code = run.execute()
    if run.abandoned:
        leave(code)
    return code


def log_exists(path: str) -> str:
    return (f"scenario: refused: the episode log {path} exists (a log is never overwritten): give another "
            "--log or --out")


def leave(code: int) -> None:
    """The process ends with no destructor of rclpy's or Fast DDS's run (see execute's end)."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(code)


# -- a warm runner --------------------------------------------------------------------------

def serve(args: argparse.Namespace) -> int:
    env = dict(os.environ)
    if args.domain is not None:
        env["ROS_DOMAIN_ID"] = os.environ["ROS_DOMAIN_ID"] = str(args.domain)
    work = WorkDir("acres_warm_session_")
    session_dir = work.path
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
        # The end is not cut short: a second SIGTERM (a Ray worker's end, after its cancelled task's
        # SIGINT) raised inside it once left a sim_bridge running.
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_IGN)
        if world is not None:
            world.stop_feed()
            world.session.stop()
        work.remove()
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
        run_args.keep_stack = bool(request.get("keep_stack", False))
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


if __name__ == "__main__":
    sys.exit(main())
