"""A campaign the tests and the benchmark both run: the Polaris driven east at 3 m/s by the test
stack, a bale swept onto and beside its track (hit on it: failed; clear beside it: passed), 3 s of
world time per run."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DRIVER = REPO / "test" / "support" / "stack_driver.py"
SCENARIO = """acres_scenario: 1
name: bale_sweep
seed: 5
duration_s: 3.0
pace: lockstep
agents:
  polaris: {vehicle: polaris, pose: {x: -10.0, y: -28.0}, task: drive east}
objects:
  - {name: bale1, uri: "acres://objects/round_bale", pose: {x: -4.5, y: -28.0}}
criteria:
  - {no_collision: {agent: polaris}}
  - {max_speed_mps: {agent: polaris, limit: 5.0}}
"""
# runs.csv's columns of the criteria: each one's name and unit
CRITERIA = ["no_collision(polaris) [contacts]", "max_speed_mps(polaris, limit=5.0) [m/s]"]


def write_campaign(directory: Path, sweep: str, driver: str = "--speed 3",
                   name: str = "campaign.yaml", scenario: str = SCENARIO) -> Path:
    """sweep.yaml (`scenario`) and a campaign over it (`sweep`: its grid/random/... lines) in
    `directory` (made if need be)."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "sweep.yaml").write_text(scenario)
    path = directory / name
    path.write_text(f"acres_campaign: 1\nscenario: sweep.yaml\n{sweep}"
                    f"stack: {sys.executable} {DRIVER} --agent polaris {driver}\ngame_args: [--cached]\n")
    return path
