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
    stack: python3 my_stack.py         # started for every run in its ROS domain (optional)
    run_timeout_s: 300                 # a run's wall-clock limit (default 120 s + 10 x duration_s)
    game_args: [--cached]              # the fake game's extra arguments (optional)

Every run's overrides are checked against the scenario before any run starts, as `--set` is.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from acres_sim.scenario.errors import ScenarioError
from acres_sim.scenario.model import Scenario
from acres_sim.scenario.scenario_file import load

SCHEMA_VERSION = 1
TOP_KEYS = ("acres_campaign", "scenario", "grid", "random", "stack", "run_timeout_s", "game_args")
RUN_TIMEOUT_BASE_S, RUN_TIMEOUT_PER_WORLD_S = 120.0, 10.0


class CampaignError(ValueError):
    """A campaign that cannot run: the message names the file and the key."""


@dataclass(frozen=True)
class Draw:
    """One random key: `uniform` over [low, high], or a `choice` among values."""

    kind: str
    values: tuple[Any, ...]

    def sample(self, rng: np.random.Generator) -> Any:
        if self.kind == "uniform":
            return float(rng.uniform(self.values[0], self.values[1]))
        return self.values[int(rng.integers(0, len(self.values)))]


@dataclass(frozen=True)
class Run:
    """One run: its number and the value of every swept key."""

    index: int
    values: dict[str, Any]

    @property
    def name(self) -> str:
        return f"run{self.index:04d}"

    def overrides(self) -> list[str]:
        """The run's keys as `--set key=value` (JSON is YAML: numbers, strings and lists as given)."""
        return [f"{key}={json.dumps(value)}" for key, value in self.values.items()]


@dataclass
class Campaign:
    path: Path
    scenario_path: Path
    scenario: Scenario
    grid: dict[str, list[Any]]
    draws: dict[str, Draw]
    random_runs: int
    random_seed: int
    stack: str
    run_timeout_s: float
    game_args: list[str]
    fingerprints: dict[str, str] = field(default_factory=dict)  # file -> sha256 of its bytes

    @property
    def keys(self) -> list[str]:
        return [*self.grid, *self.draws]

    def runs(self) -> list[Run]:
        """Every run, in a fixed order: the grid's combinations, each with `random_runs` draws."""
        rng = np.random.default_rng(self.random_seed)
        combinations = list(itertools.product(*self.grid.values())) if self.grid else [()]
        out = []
        for combination in combinations:
            fixed = dict(zip(self.grid, combination))
            for _ in range(self.random_runs if self.draws else 1):
                drawn = {key: draw.sample(rng) for key, draw in self.draws.items()}
                out.append(Run(len(out), {**fixed, **drawn}))
        return out


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load_campaign(path: str | Path) -> Campaign:
    """The campaign of a file with every run's overrides checked; CampaignError otherwise."""
    path = Path(path).resolve()
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CampaignError(f"{path}: cannot read the campaign: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise CampaignError(f"{path}: not YAML: {exc}") from None

    def fail(key: str, message: str) -> CampaignError:
        return CampaignError(f"{path}: {key}: {message}")

    if not isinstance(doc, dict):
        raise CampaignError(f"{path}: a campaign is a mapping (acres_campaign: 1, scenario: ..., grid: ...)")
    unknown = [k for k in doc if k not in TOP_KEYS]
    if unknown:
        raise fail(str(unknown[0]), f"not a campaign key; the keys are {', '.join(TOP_KEYS)}")
    if doc.get("acres_campaign") != SCHEMA_VERSION:
        raise fail("acres_campaign", f"must be {SCHEMA_VERSION} (the schema version), got "
                                     f"{doc.get('acres_campaign')!r}")
    if not isinstance(doc.get("scenario"), str):
        raise fail("scenario", "the scenario file's path (relative to the campaign file) is needed")
    scenario_path = (path.parent / doc["scenario"]).resolve()
    grid = doc.get("grid") or {}
    if not isinstance(grid, dict):
        raise fail("grid", "a mapping of dotted scenario keys to lists of values")
    for key, values in grid.items():
        if not isinstance(values, list) or not values:
            raise fail(f"grid.{key}", "a non-empty list of values")
    draws, runs, seed = _random(doc.get("random"), fail)
    overlap = set(grid) & set(draws)
    if overlap:
        raise fail(f"random.{sorted(overlap)[0]}", "swept by the grid already")
    if not grid and not draws:
        raise fail("grid", "a campaign sweeps something: give grid and/or random")
    stack = doc.get("stack") or ""
    if not isinstance(stack, str):
        raise fail("stack", "a command line (a string)")
    game_args = doc.get("game_args") or []
    if not isinstance(game_args, list) or not all(isinstance(a, str) for a in game_args):
        raise fail("game_args", "a list of strings")
    try:
        scenario = load(scenario_path)
    except ScenarioError as exc:
        raise fail("scenario", str(exc)) from None
    timeout = doc.get("run_timeout_s", RUN_TIMEOUT_BASE_S + RUN_TIMEOUT_PER_WORLD_S * scenario.duration_s)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise fail("run_timeout_s", f"a positive number of seconds, got {timeout!r}")
    campaign = Campaign(path, scenario_path, scenario, {k: list(v) for k, v in grid.items()}, draws, runs,
                        seed, stack, float(timeout), list(game_args),
                        {"campaign": _sha256(path), "scenario": _sha256(scenario_path)})
    for run in campaign.runs():
        try:
            load(scenario_path, run.overrides())
        except ScenarioError as exc:
            raise CampaignError(f"{path}: {run.name} ({_values(run)}): {exc}") from None
    return campaign


def _random(section: Any, fail: Any) -> tuple[dict[str, Draw], int, int]:
    if section is None:
        return {}, 0, 0
    if not isinstance(section, dict):
        raise fail("random", "a mapping: runs, seed and dotted keys with {uniform: [a, b]} or "
                             "{choice: [...]}")
    runs, seed = section.get("runs"), section.get("seed", 0)
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise fail("random.runs", f"how many draws: a positive integer, got {runs!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise fail("random.seed", f"a non-negative integer, got {seed!r}")
    draws = {}
    for key, spec in section.items():
        if key in ("runs", "seed"):
            continue
        if not isinstance(spec, dict) or len(spec) != 1 or next(iter(spec)) not in ("uniform", "choice"):
            raise fail(f"random.{key}", "{uniform: [low, high]} or {choice: [value, ...]}")
        kind, values = next(iter(spec.items()))
        if kind == "uniform":
            if (not isinstance(values, list) or len(values) != 2
                    or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
                    or not values[0] <= values[1]):
                raise fail(f"random.{key}.uniform", f"[low, high] with low <= high, got {values!r}")
        elif not isinstance(values, list) or not values:
            raise fail(f"random.{key}.choice", f"a non-empty list, got {values!r}")
        draws[str(key)] = Draw(kind, tuple(values))
    if not draws:
        raise fail("random", "no key to draw: add e.g. conditions.dust: {uniform: [0, 1]}")
    return draws, runs, seed


def _values(run: Run) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in run.values.items())
