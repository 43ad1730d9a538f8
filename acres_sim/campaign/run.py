"""One run of a campaign, on whichever machine it is given to (ROS-free): the scenario file (its text,
shipped with the run) through the scenario runner with the run's `--set` overrides, in a ROS domain
leased on this host, within a wall-clock limit. The result carries the report and every file the run
wrote, as bytes, so that the driver keeps them whichever node ran it.

Statuses: the runner's passed, failed and error; timeout when the wall-clock limit ended it;
interrupted when the campaign was stopped (not a result: the run is done again on resume). A run lost
with its node is an error that names the node, and is done again on resume too.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acres_sim.campaign.samplers import Run
from acres_sim.campaign.domains import DomainLease
from acres_sim.scenario.command import runner_args
from acres_sim.scenario.processes import Child
from acres_sim.work_dirs import LOCK_NAME, WorkDir

POLL_S = 0.2
RUNNER_STOP_S = 90.0
# A finished run's status (the table keeps these; a resume runs every other run again)
FINISHED = ("passed", "failed", "error", "timeout")
INTERRUPTED = "interrupted"  # the campaign was stopped: not a result
# An error without a verdict: the run's node (or its worker) died. The table shows it; a resume runs it again.
LOST = "lost with its node"


@dataclass
class RunResult:
    """What a run gives back to the campaign, whichever node ran it: its status and why, the
    runner's report (None when it wrote none), where it ran, and every file it wrote, as bytes."""

    run: Run
    status: str
    reason: str
    report: dict[str, Any] | None = None
    node: str = ""
    wall_s: float = 0.0
    files: dict[str, bytes] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.run.name

    @property
    def interrupted(self) -> bool:
        return self.status == INTERRUPTED

    @property
    def margins(self) -> dict[str, float | None]:
        """Each criterion's margin (the report's), by name; -inf for one that failed without a value
        (a goal never reached), None for one undecided; empty without a report."""
        return margins_of(self.report)

    @classmethod
    def lost(cls, run: Run, node: str, why: str) -> RunResult:
        """A run that gave nothing back (its worker or node died): an error with no verdict, on
        `node` (its id, "" when unknown), which the campaign runs again when it resumes."""
        return cls(run, "error", f"{LOST} {node or 'unknown'}: {why}", node=node)

    @property
    def was_lost(self) -> bool:
        return was_lost(self.reason)


def was_lost(reason: str) -> bool:
    """Whether a run's reason (a result's, a table row's) says the run was lost with its node."""
    return reason.startswith(LOST)


def status_counts(statuses: Iterable[str]) -> dict[str, int]:
    """How many finished runs have each status, in FINISHED's order."""
    counted = Counter(statuses)
    return {s: counted[s] for s in FINISHED}


def said(counts: dict[str, int]) -> str:
    """`2 passed, 1 failed, 0 error, 0 timeout`."""
    return ", ".join(f"{n} {s}" for s, n in counts.items())


def margins_of(report: dict[str, Any] | None) -> dict[str, float | None]:
    """A report's margins by criterion, as RunResult.margins says."""
    out: dict[str, float | None] = {}
    for c in (report or {}).get("criteria", []):
        margin = c.get("margin")
        out[c["name"]] = -math.inf if margin is None and c.get("passed") is False else margin
    return out


@dataclass
class RunSpec:
    run: Run
    scenario_text: str
    scenario_file_name: str
    campaign_dir: str  # the stack's working directory where it exists on the node
    stack: str
    timeout_s: float
    game_args: list[str] = field(default_factory=list)
    warm: bool = False  # on the worker's warm runner (sessions kept between runs), else a session of its own
    keep_stack: bool = False  # (warm) the stack runs on from run to run


def execute_run(spec: RunSpec, node: str, stop: threading.Event | None = None) -> RunResult:
    """The run to its end; `stop` set (or KeyboardInterrupt, a cancelled Ray task) interrupts it."""
    started = time.monotonic()
    status, reason, report = "error", "", None
    with WorkDir("acres_campaign_", f"{spec.run.name}_") as work:
        scenario = work / spec.scenario_file_name
        scenario.write_text(spec.scenario_text, encoding="utf-8")
        out = work / "run"
        try:
            key = _warm_key(spec, scenario)
            if key is not None:
                status, reason = _on_a_warm_runner(spec, key, scenario, out, work, stop, started)
            else:
                with DomainLease() as domain:
                    args = runner_args(scenario, stack=spec.stack, sets=spec.run.overrides(), out=out,
                                       domain=domain, game_args=spec.game_args, quiet=True)
                    env = {**os.environ, "ROS_DOMAIN_ID": str(domain),
                           "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}
                    cwd = spec.campaign_dir if Path(spec.campaign_dir).is_dir() else str(work)
                    runner = Child("runner", args, env, work, cwd=cwd)
                    try:
                        status, reason = wait_run(lambda: runner.alive, started + spec.timeout_s, stop,
                                                  spec.timeout_s)
                    finally:
                        # SIGINT: the runner ends its session (each process given its own wait) and
                        # writes its report; SIGKILL only if it has not within RUNNER_STOP_S
                        runner.stop(RUNNER_STOP_S)
        except KeyboardInterrupt:
            status, reason = INTERRUPTED, "the campaign was stopped"
        except (OSError, TimeoutError) as exc:
            status, reason = "error", f"the run could not start: {exc}"
        report_path = out / "report.json"
        if report_path.exists():
            report = json.loads(report_path.read_text(encoding="utf-8"))
            if status == "":
                status, reason = report["status"], report["reason"]
        elif status == "":
            status, reason = "error", "the scenario runner wrote no report (its output: runner.log)"
        files = {str(p.relative_to(work)): p.read_bytes() for p in sorted(work.rglob("*"))
                 if p.is_file() and p != scenario and p.name != LOCK_NAME}
    return RunResult(spec.run, status, reason, report, node, time.monotonic() - started, files)


def _warm_key(spec: RunSpec, scenario: Path) -> tuple | None:
    """The session the run would share on a warm runner; None: a session of its own (sessions: fresh,
    or a run in real time, whose world is not reset between runs)."""
    from acres_sim.scenario.scenario_file import load
    from acres_sim.scenario.session import session_key

    if not spec.warm:
        return None
    loaded = load(scenario, spec.run.overrides())
    return session_key(loaded, spec.game_args) if loaded.pace == "lockstep" else None


def _on_a_warm_runner(spec: RunSpec, key: tuple, scenario: Path, out: Path, work: Path,
                      stop: threading.Event | None, started: float) -> tuple[str, str]:
    """The run on this thread's warm runner (a new one when it has none for the run's session)."""
    from acres_sim.campaign.warm_runs import warm_runner

    runner = warm_runner(key, spec.campaign_dir if Path(spec.campaign_dir).is_dir() else "", spec.game_args)
    try:
        status, reason, output = runner.run(
            scenario, out, spec.stack, spec.run.overrides(), spec.keep_stack,
            lambda going: wait_run(going, started + spec.timeout_s, stop, spec.timeout_s))
    except BaseException:  # a cancelled Ray task (KeyboardInterrupt): the run under way is interrupted
        runner.close()
        raise
    (work / "runner.log").write_text(output, encoding="utf-8")
    return status, reason


def wait_run(going: Callable[[], bool], deadline: float, stop: threading.Event | None,
             timeout_s: float) -> tuple[str, str]:
    """('', '') once going() is False (the run ended by itself: its report says how), else why it
    is to be ended."""
    while going():
        if stop is not None and stop.is_set():
            return INTERRUPTED, "the campaign was stopped"
        if time.monotonic() > deadline:
            return "timeout", (f"the run took longer than its wall-clock limit of {timeout_s:g} s "
                               "(run_timeout_s)")
        time.sleep(POLL_S)
    return "", ""
