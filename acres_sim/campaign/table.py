"""A campaign's table, DIR/runs.csv (ROS-free): a row per finished run, rewritten whole (to a new file,
then renamed) after each, so that a campaign stopped at any moment leaves a table of what finished;
and DIR/campaign.json, the files it was made from (their SHA-256), which a resume must match.

Columns: run, a column per swept key (its dotted key), status (passed, failed, error, timeout),
passed, a column per criterion with its value (the header names its unit: `reach(...) [s]`), node
(where it ran), wall_s, reason. A run lost with its node is a row (an error naming the node) that
a resume does not keep: it runs again.
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import Any

from acres_sim.campaign.campaign_file import Campaign
from acres_sim.campaign.run import FINISHED, RunResult, was_lost

TABLE, STATE, RUNS = "runs.csv", "campaign.json", "runs"  # RUNS/<run>/: a run's files


class CampaignChanged(ValueError):
    """The directory holds a campaign made from other files than these."""


class RunsTable:
    def __init__(self, out_dir: Path, campaign: Campaign, criteria: dict[str, str]):
        """criteria: each criterion's name and unit, in the scenario's order."""
        self.path = out_dir / TABLE
        self.keys = campaign.keys
        self.criteria = {name: f"{name} [{unit}]" if unit else name for name, unit in criteria.items()}
        self.columns = ["run", *self.keys, "status", "passed", *self.criteria.values(), "node", "wall_s",
                        "reason"]
        self.rows: dict[str, dict[str, str]] = {}
        self.lost: set[str] = set()  # runs lost with their node before: run again on resume
        if self.path.exists():
            with open(self.path, newline="", encoding="utf-8") as f:
                for row in csv.DictReader(f):
                    if was_lost(row.get("reason", "")):
                        self.lost.add(row["run"])
                    elif row.get("status") in FINISHED:
                        self.rows[row["run"]] = {c: row.get(c, "") for c in self.columns}

    def add(self, result: RunResult) -> None:
        report = result.report or {}
        values = {c["name"]: c["value"] for c in report.get("criteria", [])}
        row = {"run": result.name, **{k: _cell(result.run.values.get(k)) for k in self.keys},
               "status": result.status, "passed": str(result.status == "passed"),
               **{column: _cell(values.get(c)) for c, column in self.criteria.items()}, "node": result.node,
               "wall_s": f"{result.wall_s:.2f}", "reason": result.reason}
        self.rows[result.name] = row
        self.write()

    def write(self) -> None:
        partial = self.path.with_suffix(".csv.partial")
        with open(partial, "w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, self.columns)
            writer.writeheader()
            for name in sorted(self.rows):
                writer.writerow(self.rows[name])
        os.replace(partial, self.path)


def saved_report(out_dir: Path, run: str) -> dict[str, Any] | None:
    """A finished run's report.json as the campaign saved it (None when it has none)."""
    try:
        return json.loads((out_dir / RUNS / run / "report.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (list, dict)):
        return json.dumps(value)
    return repr(value) if isinstance(value, float) else str(value)


def claim(out_dir: Path, campaign: Campaign, runs: int) -> None:
    """DIR/campaign.json for a new campaign, or the check that DIR's is this one's (CampaignChanged)."""
    state = out_dir / STATE
    mine = {"campaign": str(campaign.path), "scenario": str(campaign.scenario_path),
            "sha256": campaign.fingerprints, "runs": runs, "keys": campaign.keys}
    if state.exists():
        theirs = json.loads(state.read_text(encoding="utf-8"))
        changed = [f"the {what} file" for what in ("campaign", "scenario")
                   if theirs.get("sha256", {}).get(what) != campaign.fingerprints[what]]
        if changed:
            raise CampaignChanged(
                f"{out_dir} holds a campaign made from other files: {' and '.join(changed)} changed since "
                f"({theirs.get('campaign')}, {theirs.get('scenario')}). Its runs would not be comparable: "
                "give another --out, or put the files back as they were")
        return
    out_dir.mkdir(parents=True, exist_ok=True)
    state.write_text(json.dumps(mine, indent=2) + "\n", encoding="utf-8")
