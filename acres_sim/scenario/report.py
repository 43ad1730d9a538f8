"""A scenario run's report (ROS-free): the JSON every run writes, the JUnit XML (one test case per
criterion, for `colcon test-result` and CI), and the one-screen summary."""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from acres_sim.scenario.judge import Judge

# status -> exit code, as the README's "Testing your stack: scenarios" says: passed 0, failed 1, error 2,
# interrupted 130
EXIT_CODES = {"passed": 0, "failed": 1, "error": 2, "interrupted": 130}


def _number(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def report(judge: Judge, status: str, reason: str, wall_s: float, files: dict[str, str],
           timings: dict[str, Any] | None = None) -> dict[str, Any]:
    """status: passed, failed, error or interrupted; reason: why an error or interrupt ended it;
    timings: wall times since the run started (first_step_wall_s, first_command_wall_s)."""
    s = judge.scenario
    return {
        "scenario": s.name, "file": s.path, "seed": s.seed, "pace": s.pace, "status": status,
        "passed": status == "passed", "exit_code": EXIT_CODES[status], "reason": reason,
        "world_time_s": judge.t, "duration_s": s.duration_s, "steps": judge.steps, "wall_time_s": wall_s,
        "criteria": [{"name": c.name, "kind": type(c).__name__, "agent": c.agent,
                      "passed": c.verdict.passed, "value": _number(c.verdict.value),
                      "limit": _number(c.verdict.limit), "unit": c.unit, "margin": _number(c.margin),
                      "decided_at_s": c.verdict.decided_at_s,
                      "detail": c.verdict.detail} for c in judge.criteria],
        "files": files, **(timings or {}),
    }


def write_json(path: str | Path, result: dict[str, Any]) -> None:
    Path(path).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


def write_junit(path: str | Path, result: dict[str, Any]) -> None:
    """One testsuite (the scenario), one testcase per criterion: a failure where it failed, an
    error where the run ended before it was decided."""
    cases = result["criteria"]
    failures = sum(1 for c in cases if c["passed"] is False)
    errors = sum(1 for c in cases if c["passed"] is None)
    suite = ET.Element("testsuite", name=f"scenario.{result['scenario']}", tests=str(len(cases)),
                       failures=str(failures), errors=str(errors), skipped="0",
                       time=f"{result['wall_time_s']:.3f}")
    for c in cases:
        case = ET.SubElement(suite, "testcase", classname=f"scenario.{result['scenario']}", name=c["name"],
                             time=f"{c['decided_at_s'] or 0.0:.3f}")
        unit = f" {c['unit']}" if c.get("unit") else ""
        measured = f"value {c['value']}{unit} (limit {c['limit']}{unit}): {c['detail']}"
        if c["passed"] is False:
            ET.SubElement(case, "failure", message=c["detail"] or "failed").text = measured
        elif c["passed"] is None:
            ET.SubElement(case, "error", message=result["reason"] or "not decided").text = measured
        else:
            ET.SubElement(case, "system-out").text = measured
    root = ET.Element("testsuites", name="acres_sim scenarios", tests=str(len(cases)),
                      failures=str(failures), errors=str(errors))
    root.append(suite)
    ET.ElementTree(root).write(str(path), encoding="utf-8", xml_declaration=True)


def summary(result: dict[str, Any]) -> str:
    lines = [f"scenario {result['scenario']} ({result['file']}): {result['status'].upper()}"
             + (f" - {result['reason']}" if result["reason"] else ""),
             f"  world time {result['world_time_s']:.2f} of {result['duration_s']:g} s, "
             f"{result['steps']} steps, {result['wall_time_s']:.1f} s wall"]
    for c in result["criteria"]:
        mark = {True: "pass", False: "FAIL", None: "----"}[c["passed"]]
        unit = f" {c['unit']}" if c.get("unit") else ""
        value = "-" if c["value"] is None else f"{c['value']:.4g}{unit}"
        limit = "-" if c["limit"] is None else f"{c['limit']:.4g}{unit}"
        when = "" if c["decided_at_s"] is None else f" at {c['decided_at_s']:.2f} s"
        lines.append(f"  [{mark}] {c['name']}: {value} (limit {limit}){when} {c['detail']}")
    for kind, path in result["files"].items():
        lines.append(f"  {kind}: {path}")
    return "\n".join(lines)
