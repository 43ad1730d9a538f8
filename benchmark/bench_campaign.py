#!/usr/bin/env python3
"""A campaign's runs per minute on this machine: the same sweep (a bale on or beside the Polaris'
track x drawn dust, 3 s of world time per run, a stack driving at 3 m/s) with 1 and with 2 runs at
once, side by side in one run (Ray where installed, else threads). Figures only.

With --search: the failures a search finds against random draws, the same number of runs of one
scenario for each, over three seeds. The bale anywhere in 36 m x 24 m around the Polaris' first
metres; a run fails when the time to collision with it falls below 0.5 s, which only a bale on its
track and within its reach does (about 3 % of the ranges). The search drives min_ttc_s's margin down.

With --address HOST:PORT the campaigns run on that Ray cluster (a cluster of this machine started
with --node-ip-address 127.0.0.1 stays on loopback), and the figures say how many nodes ran runs.

    python3 -m benchmark.bench_campaign [--runs 6] [--address HOST:PORT]
                                        [--search [--search-runs 100] [--seeds 1,2,3]]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmark.report import campaign_summary, search_summary
from harness.bale_sweep import SCENARIO, write_campaign

REPO = Path(__file__).resolve().parents[1]


def campaign_minutes(tmp: Path, runs: int, workers: int, sessions: str = "warm", keep_stack: bool = False,
                     address: str = "") -> tuple[float, str, float, int]:
    """(runs per minute, where they ran, median wall seconds of a run beyond its stepping, nodes that
    ran runs) of one campaign of `runs` runs, `workers` at once, its sessions warm (the stack kept or
    not) or fresh; on the Ray cluster at `address` if given."""
    path = write_campaign(tmp, f"grid:\n  objects.bale1.pose.y: [-28.0, -20.0]\n"
                               f"random:\n  runs: {max(1, runs // 2)}\n  seed: 2\n"
                               f"  conditions.dust: {{uniform: [0, 0.3]}}\nsessions: {sessions}\n"
                               f"keep_stack: {'true' if keep_stack else 'false'}\n",
                          name=f"campaign_{workers}_{sessions}_{keep_stack}.yaml")
    path_ = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path_}
    out = tmp / f"out_{workers}_{sessions}_{keep_stack}"
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "acres_sim.campaign.cli", str(path), "--out",
                           str(out), "--workers", str(workers), *(["--address", address] if address else [])],
                          env=env,
                          capture_output=True, text=True, timeout=1800)
    wall = time.monotonic() - started
    if done.returncode not in (0, 1):
        raise RuntimeError(f"the campaign failed (exit {done.returncode}): {done.stdout[-2000:]}")
    where = next((line.split(" at once on ", 1)[1] for line in done.stdout.splitlines()
                  if " at once on " in line), "")
    with open(out / "runs.csv", newline="") as table:
        rows = list(csv.DictReader(table))
    errors = [r for r in rows if r["status"] not in ("passed", "failed")]
    if errors:
        raise RuntimeError(f"{len(errors)} runs ended in {errors[0]['status']}: {errors[0]['reason']}")
    run_wall = {row["run"]: float(row["wall_s"]) for row in rows}
    beyond = []
    for report_path in out.rglob("report.json"):
        report = json.loads(report_path.read_text())
        run = next(p for p in report_path.parts if p in run_wall)
        stepping = report["wall_time_s"] - (report["first_step_wall_s"] or 0.0)
        beyond.append(run_wall[run] - stepping)
    nodes = len({r["node"] for r in rows})
    return 60.0 * 2 * max(1, runs // 2) / wall, where, statistics.median(beyond), nodes


# (runs at once, sessions, the stack kept): on this machine, and on a cluster (its two CPUs busy)
LOCAL_VARIANTS = ((1, "warm", False), (2, "warm", False), (1, "warm", True), (1, "fresh", False))
CLUSTER_VARIANTS = ((2, "warm", False), (2, "warm", True), (2, "fresh", False))


def measure_campaign(runs: int = 6, address: str = "") -> dict:
    """Warm sessions one and two at once, one at once with the stack kept, fresh ones one at once
    (on a cluster: each two at once): runs/min and a run's wall time beyond its stepping."""
    figures: dict[str, Any] = {"runs": 2 * max(1, runs // 2), "world_s_per_run": 3.0, "runs_per_min": {},
                               "beyond_stepping_s": {}, "nodes": {}}
    with tempfile.TemporaryDirectory(prefix="acres_bench_campaign_") as tmp:
        for workers, sessions, keep in CLUSTER_VARIANTS if address else LOCAL_VARIANTS:
            rate, where, beyond, nodes = campaign_minutes(Path(tmp), runs, workers, sessions, keep, address)
            key = f"{workers} {sessions}" + (" kept-stack" if keep else "")
            figures["runs_per_min"][key] = rate
            figures["beyond_stepping_s"][key] = beyond
            figures["nodes"][key] = nodes
            figures["where"] = where
    return figures


# The bale's whole space (its place), the criterion that fails (a time to collision below 0.5 s) and the
# search's batch.
BALE_SPACE = {"objects.bale1.pose.x": (-6.0, 30.0), "objects.bale1.pose.y": (-40.0, -16.0)}
TTC = "  - {min_ttc_s: {agent: polaris, entity: bale1, limit: 0.5}}\n"
SEARCH_BATCH = 10


def _failures(tmp: Path, name: str, sweep: str, workers: int) -> tuple[int, int, float]:
    """(failed runs, runs, wall s) of one campaign over the bale's space."""
    # the same scenario, judged by the time to collision alone
    path = write_campaign(tmp / name, sweep, scenario=SCENARIO.split("criteria:")[0] + "criteria:\n" + TTC)
    env = {**os.environ,
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "acres_sim.campaign.cli", str(path), "--out",
                           str(tmp / name / "out"), "--workers", str(workers)],
                          env=env, capture_output=True, text=True, timeout=4 * 3600)
    if done.returncode not in (0, 1):
        raise RuntimeError(f"the campaign {name} failed (exit {done.returncode}): {done.stdout[-2000:]}")
    with open(tmp / name / "out" / "runs.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    errors = [r for r in rows if r["status"] not in ("passed", "failed")]
    if errors:
        raise RuntimeError(f"the campaign {name} had runs that ended in error: {errors[0]}")
    return sum(r["status"] == "failed" for r in rows), len(rows), time.monotonic() - started


def measure_search(runs: int = 100, seeds: tuple[int, ...] = (1, 2, 3), workers: int = 2) -> dict:
    """Failures found in `runs` runs by random draws and by the search, for each seed, side by side."""
    space = "".join(f"  {key}: {{uniform: [{low}, {high}]}}\n" for key, (low, high) in BALE_SPACE.items())
    out: dict = {"runs": runs, "seeds": {}}
    with tempfile.TemporaryDirectory(prefix="acres_bench_search_") as tmp:
        for seed in seeds:
            drawn = _failures(Path(tmp), f"random_{seed}",
                              f"random:\n  runs: {runs}\n  seed: {seed}\n{space}", workers)
            searched = _failures(Path(tmp), f"search_{seed}",
                                 f"search:\n  runs: {runs}\n  batch: {SEARCH_BATCH}\n  seed: {seed}\n"
                                 f"  toward: min_ttc_s\n{space}", workers)
            out["seeds"][str(seed)] = {"random_failures": drawn[0], "search_failures": searched[0],
                                       "random_wall_s": drawn[2], "search_wall_s": searched[2]}
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=6)
    p.add_argument("--search", action="store_true", help="failures found: search against random draws")
    p.add_argument("--search-runs", type=int, default=100)
    p.add_argument("--seeds", default="1,2,3")
    p.add_argument("--address", default="",
                   help="a Ray cluster's HOST:PORT (default: a local Ray instance, or threads)")
    args = p.parse_args(argv)
    if args.search:
        print(search_summary(measure_search(args.search_runs, tuple(int(s) for s in args.seeds.split(",")))))
        return 0
    print(campaign_summary(measure_campaign(args.runs, args.address)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
