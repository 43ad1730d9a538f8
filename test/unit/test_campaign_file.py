"""Campaign files (ROS-free): the sweep expanded into runs in a fixed order (grid combinations x random
draws from the seed), every run's overrides checked before any starts, clear refusals naming the
line; the pass
rate's grouping; ROS domains leased once per host."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from acres_sim.campaign.campaign_file import CampaignError, load_campaign
from acres_sim.campaign.domains import DomainLease
from acres_sim.campaign.pass_rate import groups
from acres_sim.scenario.scenario_file import load

REPO = Path(__file__).resolve().parents[2]
BALE = REPO / "scenarios" / "bale_ahead.yaml"


def _write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "campaign.yaml"
    path.write_text(f"acres_campaign: 1\nscenario: {BALE}\n{body}")
    return path


def test_a_grid_and_random_draws_expand_into_every_combination_in_order(tmp_path):
    path = _write(tmp_path, "grid:\n  conditions.dust: [0.0, 0.5]\n  objects.bale1.pose.x: [4.6, 6.0, 8.0]\n"
                            "random:\n  runs: 2\n  seed: 9\n  conditions.wetness: {uniform: [0.0, 1.0]}\n"
                            "  conditions.sun_elevation_deg: {choice: [-3, 30]}\n")
    campaign = load_campaign(path)
    runs = campaign.runs()
    assert len(runs) == 2 * 3 * 2 and [r.name for r in runs[:2]] == ["run0000", "run0001"]
    assert campaign.keys == ["conditions.dust", "objects.bale1.pose.x", "conditions.wetness",
                             "conditions.sun_elevation_deg"]
    grid = [(r.values["conditions.dust"], r.values["objects.bale1.pose.x"]) for r in runs[::2]]
    assert grid == list(itertools.product([0.0, 0.5], [4.6, 6.0, 8.0]))
    draws = [r.values["conditions.wetness"] for r in runs]
    assert len(set(draws)) == 12 and all(0.0 <= d <= 1.0 for d in draws)
    assert {r.values["conditions.sun_elevation_deg"] for r in runs} <= {-3, 30}
    assert [r.values for r in load_campaign(path).runs()] == [r.values for r in runs]  # the seed's runs
    # the overrides reach the scenario: the run's own dust, wet and bale
    scenario = load(BALE, runs[5].overrides())
    assert scenario.conditions["dust"] == runs[5].values["conditions.dust"]
    assert scenario.conditions["wetness"] == runs[5].values["conditions.wetness"]  # JSON keeps every bit
    assert scenario.objects[0].pose.x == runs[5].values["objects.bale1.pose.x"]
    assert campaign.run_timeout_s == pytest.approx(120.0 + 10.0 * 12.0)
    assert campaign.warm  # a worker's session kept from run to run unless the file says fresh
    assert not load_campaign(_write(tmp_path, "grid:\n  conditions.dust: [0.1]\nsessions: fresh\n")).warm
    assert not campaign.keep_stack
    assert load_campaign(_write(tmp_path, "grid:\n  conditions.dust: [0.1]\nstack: x\nsessions: warm\n"
                                          "keep_stack: true\n")).keep_stack
    other = _write(tmp_path, "random:\n  runs: 2\n  seed: 10\n  conditions.wetness: {uniform: [0.0, 1.0]}\n")
    assert [r.values for r in load_campaign(other).runs()] != [{"conditions.wetness": d} for d in draws[:2]]


@pytest.mark.parametrize("body,says", [
    ("", "give grid and/or random"),
    ("grid:\n  conditions.dust: []\n", "campaign.yaml:4: grid.conditions.dust: a non-empty list"),
    ("grid:\n  conditions.dust: [0.2, 7.0]\n", "run0001 (conditions.dust=7.0)"),
    ("grid:\n  objects.nothing.pose.x: [1.0]\n", "no item 'nothing'"),
    ("random:\n  seed: 1\n  conditions.dust: {uniform: [0, 1]}\n", "random.runs"),
    ("random:\n  runs: 2\n  conditions.dust: {normal: [0, 1]}\n", "random.conditions.dust"),
    ("random:\n  runs: 2\n  conditions.dust: {uniform: [1, 0]}\n",
     "campaign.yaml:5: random.conditions.dust.uniform"),
    ("grid:\n  conditions.dust: [0.1]\nrandom:\n  runs: 1\n  conditions.dust: {uniform: [0, 1]}\n",
     "swept by the grid already"),
    ("grid:\n  conditions.dust: [0.1]\nrun_timeout_s: -3\n", "run_timeout_s"),
    ("grid:\n  conditions.dust: [0.1]\nstacks: x\n", "campaign.yaml:5: stacks: unknown key"),
    ("grid:\n  conditions.dust: [0.1]\nsessions: hot\n", "campaign.yaml:5: sessions: warm or fresh"),
    ("grid:\n  conditions.dust: [0.1]\nkeep_stack: true\n", "keep_stack: a stack is kept on a warm session"),
    ("grid:\n  conditions.dust: [0.1]\nstack: x\nsessions: fresh\nkeep_stack: true\n",
     "keep_stack: a stack is kept on a warm session"),
    ("grid:\n  conditions.dust: [0.1]\nstack: x\nkeep_stack: 1\n", "keep_stack: true or false"),
])
def test_a_campaign_that_cannot_run_is_refused_with_the_key(tmp_path, body, says):
    with pytest.raises(CampaignError, match=None) as refused:
        load_campaign(_write(tmp_path, body))
    assert says in str(refused.value), str(refused.value)


def test_a_wrong_version_or_a_missing_scenario_is_refused(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("acres_campaign: 2\nscenario: x.yaml\ngrid: {seed: [1]}\n")
    with pytest.raises(CampaignError, match="acres_campaign: must be 1"):
        load_campaign(path)
    path.write_text("acres_campaign: 1\nscenario: nowhere.yaml\ngrid: {seed: [1]}\n")
    with pytest.raises(CampaignError, match="cannot read the scenario"):
        load_campaign(path)


def test_the_pass_rate_groups_values_and_bins_ranges():
    cells = ["-28.0", "-20.0", "-28.0", "-20.0"]
    assert groups(cells, [False, True, False, True]) == [("-28.0", 0, 2), ("-20.0", 2, 2)]
    drawn = [repr(float(v)) for v in np.linspace(0.0, 0.3, 20)]
    bins = groups(drawn, [bool(v > 0.15) for v in np.linspace(0.0, 0.3, 20)], ranged=True)
    assert len(bins) == 8 and sum(n for _, _, n in bins) == 20
    assert bins[0][1] == 0 and bins[-1][1] == bins[-1][2]  # none passed low, all high


def test_a_ros_domain_is_leased_to_one_holder_at_a_time(tmp_path, monkeypatch):
    monkeypatch.setenv("ACRES_SIM_DOMAINS", "220-221")
    with DomainLease(directory=tmp_path) as a, DomainLease(directory=tmp_path) as b:
        assert {a, b} == {220, 221}
        with pytest.raises(TimeoutError, match="220-221 was held"):
            with DomainLease(timeout_s=0.3, directory=tmp_path):
                pass
    with DomainLease(directory=tmp_path) as again:
        assert again == 220  # given back
    monkeypatch.setenv("ACRES_SIM_DOMAINS", "300")
    with pytest.raises(ValueError, match="0 to 232"):
        DomainLease(directory=tmp_path).__enter__()


def test_the_runs_table_keeps_finished_runs_only_and_reads_back_what_it_wrote(tmp_path):
    """A run's result is one record (RunResult); the table writes a row per finished one and, read
    again on resume, keeps exactly those: an interrupted run is none of them and runs again, and so
    does one lost with its node (shown until then as an error naming the node)."""
    from acres_sim.campaign.run import FINISHED, INTERRUPTED, RunResult
    from acres_sim.campaign.table import RunsTable

    campaign = load_campaign(_write(tmp_path, "grid:\n  conditions.dust: [0.0, 0.5, 0.9]\n"))
    runs = campaign.runs()
    report = {"criteria": [{"name": "no_collision(polaris)", "value": 0.0, "margin": -0.0}]}
    table = RunsTable(tmp_path, campaign, {"no_collision(polaris)": "contacts"})
    table.add(RunResult(runs[0], "failed", "", report, "n1", 4.25))
    table.add(RunResult.lost(runs[1], "8f3a", "NodeDiedError: its node died"))
    table.add(RunResult(runs[2], INTERRUPTED, "stopped"))
    row = table.rows[runs[1].name]  # shown as an error naming its node
    assert (row["status"], row["node"]) == ("error", "8f3a")
    assert row["reason"] == "lost with its node 8f3a: NodeDiedError: its node died"
    again = RunsTable(tmp_path, campaign, {"no_collision(polaris)": "contacts"})
    # read again: the finished run only; the lost one runs again, as the interrupted one does
    assert sorted(again.rows) == [runs[0].name] and again.lost == {runs[1].name}
    assert INTERRUPTED not in FINISHED
    first = again.rows[runs[0].name]
    assert (first["status"], first["passed"], first["no_collision(polaris) [contacts]"], first["wall_s"]) == (
        "failed", "False", "0.0", "4.25")
    # a run that errs of itself is kept, whatever its reason says
    again.add(RunResult(runs[2], "error", "the stack was lost: exit 1"))
    assert sorted(RunsTable(tmp_path, campaign, {"no_collision(polaris)": "contacts"}).rows) == [
        runs[0].name, runs[2].name]
    # what a sampler is told of each: the margins by criterion (none without a report)
    assert RunResult(runs[0], "failed", "", report).margins == {"no_collision(polaris)": -0.0}
    assert RunResult.lost(runs[1], "", "lost").margins == {}


def _corner_margin(values: dict) -> float:
    """A failure region of 0.5 % of the space: x above 9, y below 1 (of 0..10) and c == "b"."""
    return max(9.0 - values["x"], values["y"] - 1.0) + (2.0 if values["c"] == "a" else 0.0)


def _failures(sampler, toward: str = "corner") -> tuple[int, list]:
    found, runs = 0, []
    while batch := sampler.pending():
        for run in batch:
            margin = _corner_margin(run.values)
            found += margin < 0.0
            runs.append(run)
            sampler.tell(run, {toward: margin})
    return found, runs


def test_a_search_finds_more_failures_than_random_draws_and_repeats_itself():
    """Cross-entropy toward the smallest margin against the same number of random draws, three
    seeds; the same seed gives the same runs however a batch's margins come in."""
    from acres_sim.campaign.samplers import Draw, Search, Sweep

    draws = {"x": Draw("uniform", (0.0, 10.0)), "y": Draw("uniform", (0.0, 10.0)),
             "c": Draw("choice", ("a", "b"))}
    for seed in (1, 2, 3):
        searched, runs = _failures(Search(draws, 100, 10, seed, "corner"))
        drawn = sum(_corner_margin(r.values) < 0.0 for r in Sweep({}, draws, 100, seed).runs())
        assert len(runs) == 100 and [r.index for r in runs] == list(range(100))
        assert searched >= 10 and searched > 5 * max(1, drawn), (seed, searched, drawn)
    first = Search(draws, 30, 10, 7, "corner")
    _, runs = _failures(first)
    again = Search(draws, 30, 10, 7, "corner")
    given = []
    while batch := again.pending():
        assert again.pending() == []  # the next batch waits for this one's margins
        given += batch
        for run in reversed(batch):  # told in another order
            again.tell(run, {"corner": _corner_margin(run.values)})
    assert [r.values for r in given] == [r.values for r in runs]


def test_a_search_in_a_campaign_file_names_its_criterion_and_checks_its_bounds(tmp_path):
    path = _write(tmp_path, "search:\n  runs: 12\n  batch: 4\n  seed: 5\n  toward: stop_before\n"
                            "  objects.bale1.pose.x: {uniform: [4.6, 8.0]}\n"
                            "  conditions.dust: {choice: [0.0, 0.5]}\n")
    campaign = load_campaign(path)
    sampler = campaign.sampler
    assert sampler.total == 12 and sampler.toward.startswith("stop_before(") and campaign.keys == [
        "objects.bale1.pose.x", "conditions.dust"]
    assert [(r.values["objects.bale1.pose.x"], r.values["conditions.dust"]) for r in sampler.probes()] == [
        (4.6, 0.0), (4.6, 0.5), (8.0, 0.0), (8.0, 0.5)]  # every bound with every choice
    for body, says in [
        ("search:\n  runs: 4\n  toward: nothing\n  conditions.dust: {uniform: [0, 1]}\n",
         "campaign.yaml:5: search.toward: 'nothing' is not one criterion"),
        ("search:\n  runs: 4\n  conditions.dust: {uniform: [0, 1]}\n", "search.toward"),
        ("grid:\n  conditions.dust: [0.1]\nsearch:\n  runs: 4\n  toward: stop_before\n"
         "  conditions.wetness: {uniform: [0, 1]}\n",
         "campaign.yaml:6: search.conditions.dust: a search after a sweep ranges over the keys the sweep "
         "swept"),
        ("search:\n  runs: 4\n  toward: stop_before\n  conditions.dust: {uniform: [0, 7]}\n", "run0001"),
    ]:
        with pytest.raises(CampaignError) as refused:
            load_campaign(_write(tmp_path, body))
        assert says in str(refused.value), str(refused.value)


def test_a_search_after_a_sweep_gives_the_sweeps_runs_first_and_fits_its_first_draws_to_them(tmp_path):
    """grid and random, then search over the same keys: the sweep's runs come first (all at once),
    and the search's first batch is drawn around the sweep's smallest margins instead of the ranges."""
    from acres_sim.campaign.samplers import Draw, Run, Search

    path = _write(tmp_path, "grid:\n  objects.bale1.pose.x: [4.6, 8.0]\n"
                            "random:\n  runs: 2\n  seed: 3\n  conditions.dust: {uniform: [0.0, 0.5]}\n"
                            "search:\n  runs: 6\n  batch: 3\n  toward: stop_before\n"
                            "  conditions.dust: {uniform: [0.0, 0.5]}\n"
                            "  objects.bale1.pose.x: {uniform: [4.6, 8.0]}\n")
    campaign = load_campaign(path)
    sampler = campaign.sampler
    swept = sampler.pending()
    assert sampler.total == 4 + 6
    assert [r.values["objects.bale1.pose.x"] for r in swept] == [4.6, 4.6, 8.0, 8.0]
    assert sampler.pending() == []  # the search waits for the sweep's margins
    assert [r.index for r in sampler.probes()[:4]] == [0, 1, 2, 3]  # the sweep's runs are checked too
    # synthetic: x of 0..10, the failures above x = 9; a sweep that found one (x = 9.5) pulls the first draws
    draws = {"x": Draw("uniform", (0.0, 10.0))}
    sweep = [Run(i, {"x": x}) for i, x in enumerate((1.0, 3.0, 5.0, 7.0, 9.5, 9.2))]
    after, alone = Search(draws, len(sweep) + 20, 20, 1, "m", list(sweep)), Search(draws, 20, 20, 1, "m")
    assert after.pending() == sweep
    for run in sweep:
        after.tell(run, {"m": 9.0 - run.values["x"]})
    near = [r.values["x"] for r in after.pending()]
    assert [r.index for r in after.runs()[len(sweep):]] == list(range(6, 26))
    spread = [r.values["x"] for r in alone.pending()]
    assert sum(x > 8.0 for x in near) >= 15 and sum(x > 8.0 for x in spread) <= 10, (near, spread)
