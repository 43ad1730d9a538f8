"""The criteria and the judge, fed the game's episode events as the run's feed hands them on (agents,
objects, a step's contacts and farm events, its states): each criterion decided when and as its
table says, the task statuses when they change, and the report's JUnit read back."""

from __future__ import annotations

import faulthandler
import math
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from acres_sim.scenario import report as reports
from acres_sim.scenario.judge import FAILED, RUNNING, SUCCEEDED, Judge
from acres_sim.scenario.scenario_file import load

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"

SCENARIO = """\
acres_scenario: 1
name: judged
duration_s: 10.0
agents:
  polaris: {vehicle: polaris, pose: {x: 0.0, y: 0.0}}
objects:
  - {name: bale1, uri: round_bale, pose: {x: 10.0, y: 0.0}}
criteria:
  - {no_collision: {agent: polaris}}
  - {reach: {agent: polaris, x: 5.0, y: 0.0, radius_m: 1.0, within_s: 4.0}}
  - {stop_before: {agent: polaris, entity: bale1, min_distance_m: 2.0}}
  - {min_clearance_m: {agent: polaris, entity: bale1, limit: 1.0}}
  - {max_speed_mps: {agent: polaris, limit: 3.0}}
  - {max_crop_crushed_m2: {agent: polaris, limit: 0.5}}
  - {min_ttc_s: {agent: polaris, entity: bale1, limit: 1.0}}
"""
INFO = {"name": "polaris", "length_m": 3.05, "width_m": 1.59, "height_m": 1.98, "rear_overhang_m": 0.45}
UPRIGHT = {"x": 0, "y": 0, "z": 0, "w": 1}
BALE = {"name": "bale1", "uri": "acres://objects/round_bale",
        "pose": {"position": {"x": 10.0, "y": 0.0, "z": 0.0}, "orientation": UPRIGHT},
        "size_m": {"x": 1.5, "y": 1.5, "z": 1.2}}


def _stamp(t: float) -> dict:
    ns = round(t * 1e9)
    return {"sec": ns // 10**9, "nanosec": ns % 10**9}


def _states(t: float, x: float, speed: float) -> dict:
    return {"header": {"stamp": _stamp(t), "frame_id": ""}, "step": round(t * 120), "agents": [{
        "name": "polaris",
        "pose": {"position": {"x": x, "y": 0.0, "z": 0.0}, "orientation": UPRIGHT},
        "twist": {"linear": {"x": speed, "y": 0.0, "z": 0.0}, "angular": {"x": 0.0, "y": 0.0, "z": 0.0}}}]}


@pytest.fixture
def judged(tmp_path):
    path = tmp_path / "judged.yaml"
    path.write_text(SCENARIO)
    tasks: list[dict] = []
    judge = Judge(load(path), 100.0, tasks.append)  # the scenario starts at world time 100 s
    judge.on_event("agents", {"agents": [INFO]})
    judge.on_event("objects", {"objects": [BALE]})
    return judge, tasks


def _verdicts(judge: Judge) -> dict[str, tuple]:
    return {c.name.split("(")[0]: (c.verdict.passed, c.verdict.value, c.verdict.decided_at_s,
                                   c.verdict.detail) for c in judge.criteria}


def test_a_drive_that_stops_in_time_passes_every_criterion(judged):
    judge, tasks = judged
    judge.on_event("states", _states(100.0, 0.0, 0.0))  # the start's own states: not judged
    for k in range(1, 41):  # 2 m/s to x = 4.4 (k = 22), then at rest at 4.5
        t = 100.0 + 0.1 * k
        x, v = (0.1 * 2.0 * k, 2.0) if k <= 22 else (4.5, 0.0)
        judge.on_event("farm_events", {"events": [{"agent": "polaris", "kind": 0, "value": 0.01}]})
        judge.on_event("states", _states(t, x, v))
    judge.finish()
    v = _verdicts(judge)
    assert judge.passed and all(p for p, *_ in v.values()), v
    assert v["reach"][1] == pytest.approx(2.0) and v["reach"][2] == pytest.approx(2.0)  # x = 4 at 2 s
    # at rest with base_footprint at x = 4.5: the front at 7.1, the bale's side at 9.25
    assert v["stop_before"][1] == pytest.approx(9.25 - 7.1)
    assert v["min_clearance_m"][1] == pytest.approx(9.25 - 7.1)
    assert v["max_speed_mps"][1] == 2.0 and v["max_crop_crushed_m2"][1] == pytest.approx(0.40)
    # 2.25 m left at 2 m/s before it slowed to a stop 0.1 m on: 1.125 s, the least time to collision
    assert v["min_ttc_s"][1] == pytest.approx(2.25 / 2.0)
    assert [t["state"] for t in tasks] == [RUNNING, SUCCEEDED]  # told when it changed, and at the end
    assert tasks[-1]["task"] == "judged" and tasks[-1]["progress"] == 1.0
    assert tasks[0]["header"]["stamp"] == _stamp(100.1)


def test_a_drive_into_the_bale_fails_at_the_contact_with_where_and_how_fast(judged):
    judge, tasks = judged
    contact = {"agent": "polaris", "other": "bale1", "relative_speed_mps": 2.5,
               "position": {"x": 9.25, "y": 0.0, "z": 0.6}}
    for k in range(1, 61):
        t = 100.0 + 0.1 * k
        x = min(0.1 * 2.5 * k, 6.65)  # front at 9.25: on the bale's side from k = 27 on
        if k == 27:
            judge.on_event("contacts", {"contacts": [contact]})
        judge.on_event("states", _states(t, x, 2.5 if x < 6.65 else 0.0))
    judge.finish()
    v = _verdicts(judge)
    assert v["no_collision"][0] is False and v["no_collision"][2] == pytest.approx(2.7)
    assert v["no_collision"][3] == "hit bale1 at (9.25, 0.00) at 2.50 m/s"
    assert v["stop_before"][:2] == (False, 0.0) and v["stop_before"][3] == "ran into bale1"
    assert v["min_clearance_m"][0] is False
    assert v["min_ttc_s"][0] is False and v["min_ttc_s"][2] < 2.7  # below 1 s before the contact
    assert v["reach"][0] is True
    states = [t["state"] for t in tasks]
    assert states[-1] == FAILED and "no_collision(polaris): hit bale1" in tasks[-1]["detail"]


def test_too_fast_late_and_still_moving_each_fail_with_the_measured_value(judged):
    judge, _ = judged
    for k in range(1, 101):
        judge.on_event("states", _states(100.0 + 0.1 * k, -0.1 * 3.5 * k, -3.5))  # backwards, away from it
    judge.finish()
    v = _verdicts(judge)
    assert v["max_speed_mps"][:3] == (False, 3.5, pytest.approx(0.1))
    assert v["reach"][0] is False and v["reach"][2] == pytest.approx(4.0)
    assert "closest 5.35 m" in v["reach"][3]
    assert v["stop_before"][0] is False and v["stop_before"][3].startswith("still moving at the end")
    assert v["no_collision"][0] is True


def test_an_agent_never_under_command_fails_every_criterion_with_no_command(judged):
    judge, tasks = judged
    judge.no_command(["polaris"])
    assert all(c.verdict.passed is False and c.verdict.detail == "no command" for c in judge.criteria)
    assert tasks[-1]["state"] == FAILED and "no command" in tasks[-1]["detail"]


def test_an_agent_whose_commands_were_all_refused_says_what_was_refused(judged):
    judge, _ = judged
    refusal = "vehicle/ackermann_cmd: steering_angle is nan at world time 0.200 s"
    judge.no_command(["polaris"], {"polaris": refusal})
    assert {c.verdict.detail for c in judge.criteria} == {f"no command (refused: {refusal})"}


def test_the_junit_file_has_a_case_per_criterion_and_the_summary_a_line_each(judged, tmp_path):
    judge, _ = judged
    judge.on_event("states", _states(100.1, 0.0, 4.0))
    judge.finish()
    result = reports.report(judge, "failed", "", 1.5, {"log": "episode.mcap"})
    path = tmp_path / "junit.xml"
    reports.write_junit(path, result)
    suite = ET.parse(path).getroot().find("testsuite")
    assert suite is not None and suite.get("tests") == "7" and suite.get("failures") == "3"
    cases = {case.get("name"): case for case in suite.findall("testcase")}
    assert set(cases) == {c.name for c in judge.criteria}
    failure = cases["max_speed_mps(polaris, limit=3.0)"].find("failure")
    assert failure is not None and failure.get("message") == "4.00 m/s"
    assert "value 4.0 m/s (limit 3.0 m/s)" in (failure.text or "")
    text = reports.summary(result)
    assert "FAILED" in text
    assert "[FAIL] max_speed_mps(polaris, limit=3.0): 4 m/s (limit 3 m/s) at 0.10 s 4.00 m/s" in text
    assert {c["name"].split("(")[0]: c["unit"] for c in result["criteria"]} == {
        "no_collision": "contacts", "reach": "s", "stop_before": "m", "min_clearance_m": "m",
        "max_crop_crushed_m2": "m2", "max_speed_mps": "m/s", "min_ttc_s": "s"}
    margins = {c["name"].split("(")[0]: c["margin"] for c in result["criteria"]}
    # how far from failing, in the unit: 1 m/s beyond the speed limit, no contact, no crop
    assert margins["max_speed_mps"] == pytest.approx(-1.0)
    assert str(margins["no_collision"]) == "0.0"  # at the limit: not -0.0
    assert margins["max_crop_crushed_m2"] == pytest.approx(0.5)
    assert result["exit_code"] == 1 and not math.isnan(result["wall_time_s"])


def _stopping_in_time() -> list[tuple[str, dict]]:
    events = [("states", _states(100.0, 0.0, 0.0))]
    for k in range(1, 41):
        x, v = (0.1 * 2.0 * k, 2.0) if k <= 22 else (4.5, 0.0)
        events += [("farm_events", {"events": [{"agent": "polaris", "kind": 0, "value": 0.01 * k}]}),
                   ("states", _states(100.0 + 0.1 * k, x, v))]
    return events


def _into_the_bale() -> list[tuple[str, dict]]:
    contact = {"agent": "polaris", "other": "bale1", "relative_speed_mps": 2.5,
               "position": {"x": 9.25, "y": 0.0, "z": 0.6}}
    events = []
    for k in range(1, 61):
        x = min(0.1 * 2.5 * k, 6.65)
        if k >= 27:
            events.append(("contacts", {"step": round((100.0 + 0.1 * k) * 120), "contacts": [contact]}))
        events.append(("states", _states(100.0 + 0.1 * k, x, 2.5 if x < 6.65 else 0.0)))
    return events


def _too_fast_and_away() -> list[tuple[str, dict]]:
    return [("states", _states(100.0 + 0.1 * k, -0.1 * 3.5 * k, -3.5)) for k in range(1, 101)]


@pytest.mark.parametrize("drive", [_stopping_in_time, _into_the_bale, _too_fast_and_away])
@pytest.mark.parametrize("chunk", [1, 7, 12])
def test_a_step_requests_summary_is_judged_as_its_steps_are_one_by_one(tmp_path, drive, chunk):
    """The game's StepSummary gathers the same events; its summaries of `chunk` steps each give the
    judge the same verdicts, values, decision times and tallies as every step on the feed."""
    from acres_sim.fake_game.simulation.step_summary import StepSummary

    path = tmp_path / "judged.yaml"
    path.write_text(SCENARIO)
    judges = [Judge(load(path), 100.0, lambda status: None) for _ in range(2)]
    for judge in judges:
        judge.on_event("agents", {"agents": [INFO]})
        judge.on_event("objects", {"objects": [BALE]})
    per_step, summarised = judges
    gathered, seen, last = StepSummary(), 0, -1
    gathered.start(last)
    tallies: list[list] = [[], []]
    for event, body in drive():
        per_step.on_event(event, body)
        gathered.publish(event, body)
        if event == "states":
            seen += 1
            last = body["step"]
            if seen % chunk == 0:
                summarised.on_summary(gathered.body())
                tallies[0].append(per_step.take_tally())
                tallies[1].append(summarised.take_tally())
                gathered = StepSummary()
                gathered.start(last)
    summarised.on_summary(gathered.body())
    assert _verdicts(summarised) == _verdicts(per_step)
    assert tallies[0] == tallies[1] and per_step.take_tally() == summarised.take_tally()
    for judge in judges:
        judge.finish()
    assert _verdicts(summarised) == _verdicts(per_step)
    assert summarised.steps == per_step.steps


def test_an_interrupted_run_that_does_not_end_prints_its_threads_stacks(monkeypatch, capfd, tmp_path):
    """A run still going INTERRUPT_STACKS_S after Ctrl-C says where each thread is (its output is all
    a user or a test that gave up on it has); one that ends in time prints nothing of the kind."""
    runner = pytest.importorskip("acres_sim.nodes.scenario_runner", reason="the runner needs its ROS side")
    monkeypatch.setattr(runner.scenario_run, "INTERRUPT_STACKS_S", 0.2)
    args = runner.parse_args([str(SCENARIOS / "bale_ahead.yaml"), "--out", str(tmp_path)])
    run = runner.ScenarioRun(runner.load(args.file, []), args)  # scenario_run's, as the runner uses it
    run._interrupt()
    time.sleep(0.6)
    assert run.interrupted
    assert "most recent call first" in capfd.readouterr().err
    faulthandler.cancel_dump_traceback_later()
    fresh = runner.ScenarioRun(runner.load(args.file, []), args)
    fresh._interrupt()
    faulthandler.cancel_dump_traceback_later()  # what execute() does once the report is out
    time.sleep(0.4)
    assert "most recent call first" not in capfd.readouterr().err
