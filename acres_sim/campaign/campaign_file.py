"""A campaign file read and checked (ROS-free): a scenario and a sweep of its keys, expanded into runs.

    acres_campaign: 1
    scenario: bale_ahead.yaml          # relative to this file
    grid:                              # every combination, in the order of the keys
      conditions.dust: [0.0, 0.5]
    random:                            # `runs` draws (for every grid combination), from `seed`
      runs: 3
      seed: 11
      objects.bale1.pose.x: {uniform: [4.0, 8.0]}
      conditions.wet: {choice: [0.0, 1.0]}
    search:                            # runs drawn toward failures (alone, or after grid and random,
      runs: 40                         #   then over the same keys and fitted to their margins first)
      batch: 8                         #   drawn together (the search learns between batches)
      seed: 1
      toward: stop_before              #   the criterion whose margin it drives down
      objects.bale1.pose.x: {uniform: [4.0, 8.0]}
    stack: python3 my_stack.py         # started for every run in its ROS domain (optional)
    run_timeout_s: 300                 # a run's wall-clock limit (default 120 s + 10 x duration_s)
    game_args: [--cached]              # the fake game's extra arguments (optional)
    sessions: warm                     # warm (default): a worker keeps its session from run to run,
                                       #   the world reset to each run's scenario; fresh: one per run
    keep_stack: false                  # true: a warm session's stack runs on from run to run (it sees
                                       #   each reset: the world and /clock go back)

Every run's overrides are checked against the scenario before any run starts, as `--set` is (a
search's: its ranges' bounds and every choice).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from acres_sim.campaign.samplers import Draw, Run, Search, Sweep
from acres_sim.scenario.judge import Judge
from acres_sim.scenario.errors import ScenarioError
from acres_sim.scenario.model import Scenario
from acres_sim.scenario.scenario_file import load
from acres_sim.scenario.yaml_nodes import NodeReader, compose

SCHEMA_VERSION = 1
TOP_KEYS = ("acres_campaign", "scenario", "grid", "random", "search", "stack", "run_timeout_s", "game_args",
            "sessions", "keep_stack")
SESSIONS = ("warm", "fresh")
RUN_TIMEOUT_BASE_S, RUN_TIMEOUT_PER_WORLD_S = 120.0, 10.0


class CampaignError(ValueError):
    """A campaign that cannot run: the message names the file, the line and the key."""


@dataclass
class Campaign:
    path: Path
    scenario_path: Path
    scenario: Scenario
    sampler: Sweep | Search  # where its runs come from
    stack: str
    run_timeout_s: float
    game_args: list[str]
    criteria: dict[str, str]  # the scenario's criteria, name -> unit, in its order
    fingerprints: dict[str, str] = field(default_factory=dict)  # file -> sha256 of its bytes
    warm: bool = True  # sessions: warm
    keep_stack: bool = False

    @property
    def keys(self) -> list[str]:
        return self.sampler.keys

    def runs(self) -> list[Run]:
        """A sweep's runs (a search's: those it has given so far)."""
        return self.sampler.runs()


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load_campaign(path: str | Path) -> Campaign:
    """The campaign of a file with every run's overrides checked; CampaignError otherwise, naming the
    file, the line and the key."""
    path = Path(path).resolve()
    try:
        return _CampaignReader(str(path)).campaign(path)
    except ScenarioError as exc:
        raise CampaignError(str(exc)) from None


class _CampaignReader(NodeReader):
    def campaign(self, path: Path) -> Campaign:
        root = compose(path, "campaign")
        if not isinstance(root, yaml.MappingNode):
            raise ScenarioError(f"{path}:1", "", "a campaign is a mapping (acres_campaign: 1, scenario: ..., "
                                                 "grid: ...)")
        top = self.mapping(root, "", TOP_KEYS, ("acres_campaign", "scenario"))
        if self.value(top["acres_campaign"]) != SCHEMA_VERSION:
            raise self.fail(top["acres_campaign"], "acres_campaign", f"must be {SCHEMA_VERSION} (the schema "
                            f"version), got {self.value(top['acres_campaign'])!r}")
        scenario_path = (path.parent / self.text(top["scenario"], "scenario")).resolve()
        grid = self.grid(top["grid"]) if "grid" in top else {}
        draws, runs, seed = self.random(top["random"]) if "random" in top else ({}, 0, 0)
        overlap = [k for k in draws if k in grid]
        if overlap:
            raise self.fail(top["random"], f"random.{overlap[0]}", "swept by the grid already")
        if not grid and not draws and "search" not in top:
            raise self.fail(root, "grid", "a campaign sweeps something: give grid and/or random, or search")
        stack = self.text(top["stack"], "stack") if "stack" in top else ""
        game_args = [self.text(a, f"game_args.{i}") for i, a in
                     enumerate(self.sequence(top["game_args"], "game_args"))] if "game_args" in top else []
        warm = True
        if "sessions" in top:
            sessions = self.value(top["sessions"])
            if sessions not in SESSIONS:
                raise self.fail(top["sessions"], "sessions", f"warm or fresh, got {sessions!r}")
            warm = sessions == "warm"
        keep_stack = False
        if "keep_stack" in top:
            keep_stack = self.value(top["keep_stack"])
            if not isinstance(keep_stack, bool):
                raise self.fail(top["keep_stack"], "keep_stack", f"true or false, got {keep_stack!r}")
            if keep_stack and not (warm and "stack" in top):
                raise self.fail(top["keep_stack"], "keep_stack", "a stack is kept on a warm session only: "
                                "give a stack, and no sessions: fresh")
        try:
            scenario = load(scenario_path)
        except ScenarioError as exc:
            raise self.fail(top["scenario"], "scenario", str(exc)) from None
        if "run_timeout_s" in top:
            timeout = self.number(top["run_timeout_s"], "run_timeout_s", 1e-3)
        else:
            timeout = RUN_TIMEOUT_BASE_S + RUN_TIMEOUT_PER_WORLD_S * scenario.duration_s
        criteria = {c.name: c.unit for c in Judge(scenario, math.inf, lambda status: None).criteria}
        sweep = Sweep(grid, draws, runs, seed) if grid or draws else None
        sampler = self.search(top["search"], list(criteria), sweep) if "search" in top else sweep
        assert sampler is not None  # a campaign sweeps something (checked above)
        campaign = Campaign(path, scenario_path, scenario, sampler, stack,
                            float(timeout), game_args, criteria,
                            {"campaign": _sha256(path), "scenario": _sha256(scenario_path)}, warm,
                            keep_stack)
        for run in sampler.probes():
            try:
                load(scenario_path, run.overrides())
            except ScenarioError as exc:
                raise CampaignError(f"{path}: {run.name} ({_values(run)}): {exc}") from None
        return campaign

    def grid(self, node: yaml.Node) -> dict[str, list[Any]]:
        out = {}
        for key, _, values in self.pairs(node, "grid"):
            items = self.sequence(values, f"grid.{key}")
            if not items:
                raise self.fail(values, f"grid.{key}", "a non-empty list of values")
            out[key] = [self.value(item) for item in items]
        return out

    def draws(self, node: yaml.Node, section: str, settings: tuple[str, ...]
              ) -> tuple[dict[str, Draw], dict[str, yaml.Node]]:
        """A section of settings (their names) and dotted keys to draw, each {uniform: [low, high]}
        or {choice: [...]}; the draws and the settings given."""
        entries = self.pairs(node, section)
        given = {key: value for key, _, value in entries if key in settings}
        draws = {}
        for key, _, spec in entries:
            if key in settings:
                continue
            where = f"{section}.{key}"
            kinds = self.mapping(spec, where, ("uniform", "choice"))
            if len(kinds) != 1:
                raise self.fail(spec, where, "{uniform: [low, high]} or {choice: [value, ...]}")
            kind, values_node = next(iter(kinds.items()))
            values = [self.value(v) for v in self.sequence(values_node, f"{where}.{kind}")]
            if kind == "uniform" and (
                    len(values) != 2 or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                for v in values) or not values[0] <= values[1]):
                raise self.fail(values_node, f"{where}.uniform",
                                f"[low, high] with low <= high, got {values!r}")
            if kind == "choice" and not values:
                raise self.fail(values_node, f"{where}.choice", "a non-empty list")
            draws[key] = Draw(kind, tuple(values))
        if not draws:
            raise self.fail(node, section, "no key to draw: add e.g. conditions.dust: {uniform: [0, 1]}")
        return draws, given

    def count(self, given: dict[str, yaml.Node], node: yaml.Node, key: str, what: str, low: int,
              default: int | None = None) -> int:
        name = key.rpartition(".")[2]
        if name not in given:
            if default is None:
                raise self.fail(node, key, f"{what}: an integer of at least {low} (missing)")
            return default
        value = self.integer(given[name], key)
        if value < low:
            raise self.fail(given[name], key, f"{what}: an integer of at least {low}, got {value}")
        return value

    def random(self, node: yaml.Node) -> tuple[dict[str, Draw], int, int]:
        draws, given = self.draws(node, "random", ("runs", "seed"))
        runs = self.count(given, node, "random.runs", "how many draws", 1)
        seed = self.count(given, node, "random.seed", "the seed", 0, default=0)
        return draws, runs, seed

    def search(self, node: yaml.Node, names: list[str], sweep: Sweep | None) -> Search:
        """names: the scenario's criteria, one of which the search drives toward failing; sweep: the
        grid and random runs it follows (the same keys), if any."""
        draws, given = self.draws(node, "search", ("runs", "batch", "seed", "toward"))
        what = "how many runs the search draws (after the sweep's)" if sweep else "how many runs in all"
        runs = self.count(given, node, "search.runs", what, 1)
        if sweep is not None and set(draws) != set(sweep.keys):
            differ = sorted(set(draws) ^ set(sweep.keys))[0]
            raise self.fail(node, f"search.{differ}", "a search after a sweep ranges over the keys the sweep "
                                                      f"swept ({', '.join(sweep.keys)}), no other")
        batch = self.count(given, node, "search.batch", "how many runs are drawn together", 1, default=8)
        seed = self.count(given, node, "search.seed", "the seed", 0, default=0)
        if "toward" not in given:
            raise self.fail(node, "search.toward", "the criterion whose margin the search drives down "
                                                   "(missing)")
        toward = self.text(given["toward"], "search.toward")
        kinds = [n for n in names if n.split("(")[0] == toward]
        if toward not in names and len(kinds) != 1:
            raise self.fail(given["toward"], "search.toward",
                            f"{toward!r} is not one criterion of the scenario (they are: {', '.join(names)})")
        first = sweep.runs() if sweep is not None else []
        return Search(draws, len(first) + runs, batch, seed, toward if toward in names else kinds[0], first)


def _values(run: Run) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in run.values.items())
