"""`ros2 run acres_sim campaign FILE --out DIR [--address RAY_ADDRESS] [--workers N]`: a scenario run
over a sweep of its keys (campaign_file.py), every run its own session in its own ROS domain, as Ray
tasks (executors.py) or threads where Ray is not installed.

DIR gets campaign.json (the files it was made from), runs.csv (table.py, rewritten after every run),
runs/<run>/ (each run's report.json, episode.mcap and its processes' output) and pass_rate.png.
Run again with the same DIR, it does only the runs not finished yet, and refuses when the campaign
or scenario file changed. Ctrl-C stops the runs under way (their sessions end; they are done again
on resume) and keeps the table of what finished. A run whose Ray node (or worker) died is an error
naming the node; the campaign goes on with the nodes left, and does that run again on resume.

--address: the address given is the one used; a loopback one (127.0.0.1:PORT, a cluster of this
machine started with --node-ip-address 127.0.0.1) keeps every Ray process of the campaign on
loopback. A cluster whose port takes no connection, or that Ray cannot join, within
--connect-timeout-s (30 s) ends the campaign with exit 2 and what to check.

Exit: 0 every run passed, 1 a run failed, ended in error or timed out, 2 the campaign was refused
(or its cluster did not answer), 130 stopped.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from pathlib import Path

from acres_sim.campaign import html_report, pass_rate
from acres_sim.campaign.campaign_file import CampaignError, load_campaign
from acres_sim.campaign.executors import (
    ClusterUnreachable,
    LocalRuns,
    RayRuns,
    cluster_endpoint,
    keep_ray_on_loopback,
    on_loopback,
    ray_installed,
    wait_for_cluster,
)
from acres_sim.campaign.run import RunResult, RunSpec, margins_of, said, status_counts
from acres_sim.campaign.table import RUNS, CampaignChanged, RunsTable, claim, saved_report

PICTURE = "pass_rate.png"
DRAIN_S = 60.0  # after Ctrl-C: the runs under way end their sessions within this


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="campaign", description="Run a scenario over a sweep of its keys.")
    p.add_argument("file", help="the campaign (YAML: acres_campaign: 1)")
    p.add_argument("--out", default="", metavar="DIR",
                   help="the campaign's directory (new, or one to resume)")
    p.add_argument("--address", default="", metavar="RAY_ADDRESS",
                   help="a Ray cluster's address (ray start --head prints it); default: this machine")
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="runs at once (default: one per core, of the cluster with --address)")
    p.add_argument("--connect-timeout-s", type=float, default=30.0, metavar="S",
                   help="with --address: the cluster answers and Ray joins it within this, or exit 2 (30)")
    p.add_argument("--check", action="store_true", help="check the campaign, list its runs and exit")
    args = p.parse_args(argv)
    if not args.out and not args.check:
        p.error("--out DIR is needed: the campaign's directory (new, or one to resume)")
    if args.workers is not None and args.workers < 1:
        p.error("--workers must be at least 1")
    if not args.connect_timeout_s > 0:
        p.error("--connect-timeout-s must be positive")
    return args


def _say(line: str) -> None:
    print(f"campaign: {line}", flush=True)


def _save(out: Path, result: RunResult) -> None:
    run_dir = out / RUNS / result.name
    run_dir.mkdir(parents=True, exist_ok=True)
    for name, data in result.files.items():
        target = run_dir / name.removeprefix("run/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def _executor(args: argparse.Namespace) -> LocalRuns | RayRuns:
    if not ray_installed():
        return LocalRuns(args.workers)
    if not args.address:
        return RayRuns(None, args.workers)

    def give_up() -> None:  # ray.init retries for minutes without a word: say why and end
        print(f"campaign: the Ray cluster at {args.address} takes connections, but Ray did not join it "
              f"within {args.connect_timeout_s:g} s: is it a Ray head's port (ray start --head prints the "
              "address), of the same Ray and Python versions, and does it reach this machine back?",
              file=sys.stderr, flush=True)
        os._exit(2)

    _say(f"joining the Ray cluster at {args.address}")
    watchdog = threading.Timer(args.connect_timeout_s, give_up)
    watchdog.daemon = True
    watchdog.start()
    try:
        return RayRuns(args.address, args.workers)
    finally:
        watchdog.cancel()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        campaign = load_campaign(args.file)
    except CampaignError as exc:
        print(f"campaign: refused: {exc}", file=sys.stderr)
        return 2
    sampler = campaign.sampler
    if args.check:
        first = sampler.pending()
        search = "" if len(first) == sampler.total else f"; a search: the first {len(first)}, then by margins"
        print(f"{args.file}: ok: {sampler.total} runs of {campaign.scenario.name} over "
              f"{', '.join(campaign.keys)}{search}")
        for run in first:
            print(f"  {run.name}: " + ", ".join(f"{k}={v!r}" for k, v in run.values.items()))
        return 0
    if args.address and not ray_installed():
        print("campaign: refused: --address needs Ray, which is not installed here "
              "(pip install -r tools/requirements-learn.txt, or ACRES_LEARN=1 bash tools/bootstrap.sh)",
              file=sys.stderr)
        return 2
    if not args.address:
        keep_ray_on_loopback()
    else:
        try:
            endpoint = cluster_endpoint(args.address)
            if endpoint is not None:
                if on_loopback(endpoint[0]):
                    keep_ray_on_loopback()  # Ray would take this machine's network address for the driver
                wait_for_cluster(*endpoint, args.connect_timeout_s)
        except ClusterUnreachable as exc:
            print(f"campaign: {exc}", file=sys.stderr, flush=True)
            return 2
    out = Path(args.out).resolve()
    try:
        claim(out, campaign, sampler.total)
    except CampaignChanged as exc:
        print(f"campaign: refused: {exc}", file=sys.stderr)
        return 2
    table = RunsTable(out, campaign, campaign.criteria)
    text = campaign.scenario_path.read_text(encoding="utf-8")
    specs: list[RunSpec] = []
    # Runs lost with their node before run again for their verdict; a search learns nothing from
    # them, as it learnt nothing when they were lost, so that it draws what the first session drew.
    rerun = set(table.lost)

    def more() -> None:
        """The runs the sampler gives now: one finished before is told its margins (from its report)
        and not run again, the others wait for a worker."""
        while fresh := sampler.pending():
            waiting = False
            for run in fresh:
                if run.name in table.rows:
                    sampler.tell(run, margins_of(saved_report(out, run.name)))
                    continue
                if run.name in rerun:
                    sampler.tell(run, {})
                specs.append(RunSpec(run, text, campaign.scenario_path.name, str(campaign.path.parent),
                                     campaign.stack, campaign.run_timeout_s, campaign.game_args,
                                     campaign.warm, campaign.keep_stack))
                waiting = True
            if waiting:
                return

    more()
    before = len(table.rows)
    executor = _executor(args)
    _say(f"{campaign.scenario.name}: {sampler.total} runs over {', '.join(campaign.keys)}"
         f" ({before} finished before{f', {len(rerun)} lost with their node run again' if rerun else ''}),"
         f" {executor.workers} at once on {executor.where}")
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)  # a kill ends it as Ctrl-C does
    started, done = time.monotonic(), 0
    interrupted = False
    try:
        try:
            while specs or executor.in_flight:
                while specs and executor.in_flight < executor.workers:
                    executor.submit(specs.pop(0))
                for result in executor.finished(1.0):
                    if result is None or result.interrupted:
                        continue
                    _save(out, result)
                    table.add(result)
                    if result.name not in rerun:
                        sampler.tell(result.run, result.margins)
                    more()
                    done += 1
                    _say(f"{result.name} {result.status:<7} ({done}/{sampler.total - before}, "
                         f"{result.wall_s:.1f} s"
                         f"{', node ' + result.node[:12] if result.node else ''})"
                         + (f": {result.reason}" if result.reason else ""))
        except KeyboardInterrupt:
            interrupted = True
            _say(f"stopping: the {executor.in_flight} runs under way end their sessions "
                 "(they run again when the campaign resumes)")
            executor.cancel()
            deadline = time.monotonic() + DRAIN_S
            while executor.in_flight and time.monotonic() < deadline:
                for result in executor.finished(1.0):
                    if result is not None and not result.interrupted:
                        _save(out, result)
                        table.add(result)
    finally:
        signal.signal(signal.SIGTERM, previous)
        executor.close()
        table.write()
        rows = list(table.rows.values())
        if rows:
            pass_rate.draw(out / PICTURE, campaign.scenario.name, campaign.keys, rows, sampler.ranged)
            html_report.write_index(out, campaign.scenario.name, str(campaign.path), campaign.keys,
                                    campaign.criteria, rows, sampler.total, PICTURE)
    wall = time.monotonic() - started
    counts = status_counts(r["status"] for r in rows)
    _say(f"{len(rows)}/{sampler.total} runs finished: " + said(counts)
         + (f"; {done} in {wall:.0f} s ({60.0 * done / wall:.2f} runs/min)" if done and wall > 0 else ""))
    _say(f"page {out / html_report.PAGE} (open it in a browser), table {table.path}, runs {out / RUNS}")
    if interrupted:
        return 130
    return 0 if counts["passed"] == sampler.total else 1


if __name__ == "__main__":
    sys.exit(main())
