#!/usr/bin/env python3
"""A campaign's runs per minute on this machine: the same sweep (a bale on or beside the Polaris'
track x drawn dust, 3 s of world time per run, a stack driving at 3 m/s) with 1 and with 2 runs at
once, side by side in one run (Ray where installed, else threads). Figures only.

    python3 -m benchmark.bench_campaign [--runs 6]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmark.report import campaign_summary
from harness.bale_sweep import write_campaign

REPO = Path(__file__).resolve().parents[1]


def campaign_minutes(tmp: Path, runs: int, workers: int) -> tuple[float, str]:
    """(runs per minute, where they ran) of one campaign of `runs` runs, `workers` at once."""
    path = write_campaign(tmp, f"grid:\n  objects.bale1.pose.y: [-28.0, -20.0]\n"
                               f"random:\n  runs: {max(1, runs // 2)}\n  seed: 2\n"
                               f"  conditions.dust: {{uniform: [0, 0.3]}}\n", name=f"campaign_{workers}.yaml")
    path_ = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path_}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "acres_sim.campaign.cli", str(path), "--out",
                           str(tmp / f"out_{workers}"), "--workers", str(workers)], env=env,
                          capture_output=True, text=True, timeout=1800)
    wall = time.monotonic() - started
    if done.returncode not in (0, 1):
        raise RuntimeError(f"the campaign failed (exit {done.returncode}): {done.stdout[-2000:]}")
    where = next((line.split(" at once on ", 1)[1] for line in done.stdout.splitlines()
                  if " at once on " in line), "")
    return 60.0 * 2 * max(1, runs // 2) / wall, where


def measure_campaign(runs: int = 6) -> dict:
    with tempfile.TemporaryDirectory(prefix="acres_bench_campaign_") as tmp:
        one, where = campaign_minutes(Path(tmp), runs, 1)
        two, _ = campaign_minutes(Path(tmp), runs, 2)
    return {"runs": 2 * max(1, runs // 2), "runs_per_min": {"1": one, "2": two}, "where": where,
            "world_s_per_run": 3.0}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=6)
    args = p.parse_args(argv)
    print(campaign_summary(measure_campaign(args.runs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
