"""The scenario file: the shipped scenarios load, every kind of mistake is refused before anything
starts with the file, the line and the key, and --set overrides a key for one run."""

from __future__ import annotations

from pathlib import Path

import pytest

from acres_sim.nodes.scenario_runner import main
from acres_sim.scenario.command import command_line
from acres_sim.scenario.scenario_file import ScenarioError, load

REPO = Path(__file__).resolve().parents[2]
SHIPPED = sorted((REPO / "scenarios").glob("*.yaml"))

GOOD = """\
acres_scenario: 1
name: bale_ahead
duration_s: 12.0
agents:
  polaris: {vehicle: polaris, pose: {x: -10.0, y: -28.0, yaw_deg: 0.0}}
objects:
  - {name: bale1, uri: "acres://objects/round_bale", pose: {x: 4.6, y: -28.0}}
conditions: {dust: 0.1}
events:
  - {at_s: 2.0, conditions: {dust: 0.5}}
  - {at_s: 3.0, delete: bale1}
criteria:
  - {no_collision: {agent: polaris}}
  - {stop_before: {agent: polaris, entity: bale1, min_distance_m: 2.0}}
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "scenario.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_every_shipped_scenario_loads_and_names_its_agents_in_criteria(path):
    scenario = load(path)
    assert scenario.name == path.stem and scenario.criteria and scenario.judged_agents
    assert all(c.agent in {a.name for a in scenario.agents} for c in scenario.criteria)


def test_a_good_file_reads_into_its_parts(tmp_path):
    s = load(_write(tmp_path, GOOD))
    assert (s.name, s.seed, s.pace, s.duration_s) == ("bale_ahead", 42, "lockstep", 12.0)
    assert s.agents[0].pose.x == -10.0 and s.objects[0].uri == "acres://objects/round_bale"
    assert [(e.at_s, e.kind) for e in s.events] == [(2.0, "conditions"), (3.0, "delete")]
    assert [c.name for c in s.criteria] == ["no_collision(polaris)",
                                            "stop_before(polaris, entity=bale1, min_distance_m=2.0)"]
    assert (s.start_timeout_s, s.stack_timeout_s, s.command_period_s) == (30.0, 10.0, 0.1)


REFUSALS = [
    ("duration_s: 12.0", "duration_s: ten", ":3: duration_s: must be a finite number"),
    ("name: bale_ahead", "name: bale_ahead\nspeed: 3", ":3: speed: unknown key"),
    ("vehicle: polaris, pose", "vehicle: tractor, pose",
     ":5: agents.polaris.vehicle: no vehicle 'tractor'"),
    ('"acres://objects/round_bale"', '"acres://objects/barn"', ":7: objects.0.uri: no object"),
    ("{x: 4.6, y: -28.0}}", "{x: 4600.0, y: -28.0}}",
     ":7: objects.0.pose.x: 4600 is out of range"),
    ("entity: bale1, min", "entity: bale9, min",
     ":14: criteria.1.stop_before.entity: no entity 'bale9'"),
    ("{no_collision: {agent: polaris}}", "{no_collision: {agent: maxxum}}",
     ":13: criteria.0.no_collision.agent: no agent 'maxxum'"),
    ("{no_collision: {agent: polaris}}", "{no_crash: {agent: polaris}}",
     ":13: criteria.0.no_crash: no criterion"),
    ("{x: 4.6, y: -28.0}}", "{x: -8.0, y: -28.0}}",
     ":5: agents.polaris.pose: polaris starts overlapping bale1"),
    ("conditions: {dust: 0.1}", "conditions: {dust: 2.0}",
     ":8: conditions.dust: dust must be 0 .. 1"),
    ("{at_s: 3.0, delete: bale1}", "{at_s: 3.0, delete: bale2}",
     ":11: events.1.delete: no object 'bale2'"),
    ("{at_s: 3.0, delete: bale1}", "{at_s: 1.0, delete: bale1}",
     ":11: events.1.at_s: events are in time order"),
    ("acres_scenario: 1", "acres_scenario: 2", ":1: acres_scenario: schema version 2"),
    ("agents:\n", "agents: [\n", ": not YAML"),
]


@pytest.mark.parametrize("old,new,expected", REFUSALS,
                         ids=[r[2].split(": ")[-2 if r[2].count(": ") > 1 else -1][:30] for r in REFUSALS])
def test_a_wrong_file_is_refused_with_its_line_and_key(tmp_path, old, new, expected):
    assert old in GOOD
    path = _write(tmp_path, GOOD.replace(old, new, 1))
    with pytest.raises(ScenarioError) as refused:
        load(path)
    assert str(refused.value).startswith(str(path)) and expected in str(refused.value), str(refused.value)


def test_set_overrides_a_key_for_one_run_and_is_checked_like_the_file(tmp_path):
    path = _write(tmp_path, GOOD)
    s = load(path, ["conditions.dust=0.5", "objects.bale1.pose.x=6", "seed=7",
                    "criteria.1.stop_before.min_distance_m=3", "conditions.wetness=0.2"])
    assert s.conditions == {"dust": 0.5, "wetness": 0.2} and s.objects[0].pose.x == 6.0 and s.seed == 7
    assert s.criteria[1].params["min_distance_m"] == 3.0
    for override, expected in (("conditions.dust=2", "--set conditions.dust=2: conditions.dust: dust must"),
                               ("objects.bale7.pose.x=1",
                                "--set objects.bale7.pose.x=1: objects.bale7.pose.x: no item 'bale7'"),
                               ("duration_s", "--set duration_s: give it as key=value")):
        with pytest.raises(ScenarioError) as refused:
            load(path, [override])
        assert expected in str(refused.value), str(refused.value)


def test_check_says_ok_or_refused_and_exits_0_or_2_without_starting_anything(tmp_path, capsys):
    assert main([str(_write(tmp_path, GOOD)), "--check"]) == 0
    assert "ok: bale_ahead, 1 agents, 1 objects, 2 events, 2 criteria" in capsys.readouterr().out
    assert main([str(_write(tmp_path, GOOD.replace("duration_s: 12.0", "duration_s: -1"))), "--check"]) == 2
    assert "refused" in capsys.readouterr().err
    assert main([str(tmp_path / "missing.yaml")]) == 2
    assert "cannot read the scenario" in capsys.readouterr().err


def test_the_launch_files_command_line_is_the_runners():
    args = command_line(file="a.yaml", stack="ros2 run my planner", set="conditions.dust=0.5; seed=3",
                        junit="out.xml", until_decided="true")
    assert args[1:] == ["-m", "acres_sim.nodes.scenario_runner", "a.yaml", "--stack", "ros2 run my planner",
                        "--junit", "out.xml", "--until-decided", "--set=conditions.dust=0.5", "--set=seed=3"]
    with pytest.raises(ValueError, match="file is empty"):
        command_line(file="")


def test_the_readmes_example_scenario_is_a_valid_file(tmp_path):
    readme = (REPO / "README.md").read_text()
    section = readme[readme.index("## Testing your stack: scenarios"):]
    example = section[section.index("```yaml\n") + len("```yaml\n"):section.index("```\n\n|")]
    s = load(_write(tmp_path, example))
    assert [a.name for a in s.agents] == ["polaris", "maxxum"] and s.agent("maxxum").waypoints
    assert len(s.criteria) == 7 and [e.kind for e in s.events] == ["conditions", "spawn"]
