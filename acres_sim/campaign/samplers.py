"""Where a campaign's runs come from (ROS-free), apart from the file that names them: a sampler gives
the runs, in a fixed order, and is told each finished run's margins (each criterion's, signed, in
its unit: how far the run was from failing it).

Sweep, the one there is: a grid's combinations, each with `runs` seeded random draws; it knows every
run before the first starts and learns nothing from their margins.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from typing import Any

import numpy as np


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
class Sweep:
    """The grid's combinations in the order of its keys, each with `draws_each` draws of the random
    keys from one generator seeded with `seed` (1 run per combination without random keys)."""

    grid: dict[str, list[Any]]
    draws: dict[str, Draw]
    draws_each: int
    seed: int

    @property
    def keys(self) -> list[str]:
        return [*self.grid, *self.draws]

    @property
    def ranged(self) -> frozenset[str]:
        """The keys drawn from a range (a picture bins their values)."""
        return frozenset(k for k, d in self.draws.items() if d.kind == "uniform")

    def runs(self) -> list[Run]:
        rng = np.random.default_rng(self.seed)
        combinations = list(itertools.product(*self.grid.values())) if self.grid else [()]
        out = []
        for combination in combinations:
            fixed = dict(zip(self.grid, combination))
            for _ in range(self.draws_each if self.draws else 1):
                drawn = {key: draw.sample(rng) for key, draw in self.draws.items()}
                out.append(Run(len(out), {**fixed, **drawn}))
        return out

    def tell(self, run: Run, margins: dict[str, float | None]) -> None:
        """A finished run's margins by criterion: a sweep draws nothing from them."""
