"""Where a campaign's runs come from (ROS-free), apart from the file that names them: a sampler gives
the runs, in a fixed order, and is told each finished run's margins (each criterion's, signed, in
its unit: how far the run was from failing it).

Sweep: a grid's combinations, each with `runs` seeded random draws; it gives every run at once and
learns nothing from their margins. Search: batches drawn more and more where one criterion's margin
is smallest (failures first), each batch once the one before is told; after a sweep, the sweep's
runs are its first batch.

`pending()` gives the runs a sampler can give now and has not given; [] while it waits for margins,
and once it has given `total`.
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass, field
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
    _given: bool = False

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

    @property
    def total(self) -> int:
        return math.prod(len(v) for v in self.grid.values()) * (self.draws_each if self.draws else 1)

    def probes(self) -> list[Run]:
        """The runs to check against the scenario before any starts: all of them."""
        return self.runs()

    def pending(self) -> list[Run]:
        if self._given:
            return []
        self._given = True
        return self.runs()

    def tell(self, run: Run, margins: dict[str, float | None]) -> None:
        """A finished run's margins by criterion: a sweep draws nothing from them."""


# Chosen on a failure region of 0.5 % of a 3-key space, 100 runs in batches of 10, 8 seeds (random
# draws: 0.5 failures expected): these found 16-42 failures each; an elite of 0.3, 3-18; an elite of
# 0.25 with a spread floor of 0.05 and smoothing 0.7, 0-6 (the spread shrank to the floor within two
# batches and the fit crept). A small elite, a fit that moves fast and a spread that stays wide.
ELITE = 0.1  # the share of the runs so far, lowest margins first, that the next batch is drawn around
SMOOTHING = 0.9  # the weight of the new fit against the last one
MIN_SPREAD = 0.15  # a range key's spread never falls below this share of its range (it keeps looking)


@dataclass
class Search:
    """A cross-entropy search: batches of `batch` runs, the first drawn from the ranges, each next one
    from a distribution fitted to the runs so far with the smallest margin of the criterion `toward`
    (failed runs first): a normal per range key (clipped to its range), a categorical per choice key.
    Batch k's draws come from a generator seeded with (seed, k) and the runs told before it, so the
    same file gives the same runs, however the runs of a batch finish, and a resumed campaign draws
    what the first would have. After a sweep (`first`, its runs with a value of every key), the first
    draws are already fitted to the sweep's margins."""

    draws: dict[str, Draw]
    total: int  # runs in all, `first` among them
    batch: int
    seed: int
    toward: str
    first: list[Run] = field(default_factory=list)  # a sweep's runs, given (and learnt from) before any draw
    _given: list[Run] = field(default_factory=list)
    _scores: dict[int, float | None] = field(default_factory=dict)
    _normal: dict[str, tuple[float, float]] = field(default_factory=dict)  # key -> (mean, spread)
    _choice: dict[str, np.ndarray] = field(default_factory=dict)  # key -> probabilities

    @property
    def keys(self) -> list[str]:
        return list(self.draws)

    @property
    def ranged(self) -> frozenset[str]:
        return frozenset(k for k, d in self.draws.items() if d.kind == "uniform")

    def runs(self) -> list[Run]:
        """The runs given so far (the rest depend on their margins)."""
        return list(self._given)

    def probes(self) -> list[Run]:
        """Runs that check what the search may draw (after the sweep's own runs): every range key at
        its low, then at its high bound, with each choice key at each of its values."""
        ranges = {k: d.values for k, d in self.draws.items() if d.kind == "uniform"}
        choices = {k: d.values for k, d in self.draws.items() if d.kind == "choice"}
        widest = max((len(v) for v in choices.values()), default=1)
        out = list(self.first)
        for end in (0, 1):
            for i in range(widest):
                values = {k: float(v[end]) for k, v in ranges.items()}
                values.update({k: v[i % len(v)] for k, v in choices.items()})
                out.append(Run(len(out), {k: values[k] for k in self.draws}))
        return out

    def pending(self) -> list[Run]:
        """The next batch, once every run given so far has been told; [] until then, and at the end."""
        if len(self._given) >= self.total or any(r.index not in self._scores for r in self._given):
            return []
        if len(self._given) < len(self.first):
            self._given.extend(self.first)
            return list(self.first)
        k = len(self._given) // self.batch
        self._fit()
        rng = np.random.default_rng([self.seed, k])
        start = len(self._given)
        runs = [Run(start + i, {key: self._draw(key, rng) for key in self.draws})
                for i in range(min(self.batch, self.total - start))]
        self._given.extend(runs)
        return runs

    def tell(self, run: Run, margins: dict[str, float | None]) -> None:
        self._scores[run.index] = margins.get(self.toward)

    def _draw(self, key: str, rng: np.random.Generator) -> Any:
        draw = self.draws[key]
        if draw.kind == "uniform":
            if key not in self._normal:
                return draw.sample(rng)
            low, high = draw.values
            mean, spread = self._normal[key]
            return float(np.clip(rng.normal(mean, spread), low, high))
        p = self._choice.get(key)
        return draw.values[int(rng.choice(len(draw.values), p=p))] if p is not None else draw.sample(rng)

    def _fit(self) -> None:
        told = sorted((score, index) for index, score in self._scores.items() if score is not None)
        if len(told) < 2:
            return  # nothing to learn from yet: the ranges as they are
        elite = [self._given[index].values for _, index in told[:max(2, math.ceil(ELITE * len(told)))]]
        for key, draw in self.draws.items():
            values = [v[key] for v in elite]
            if draw.kind == "uniform":
                low, high = draw.values
                floor = MIN_SPREAD * (high - low)
                mean, spread = float(np.mean(values)), float(np.std(values))
                # the last fit's (at first the range's own: its middle, its standard deviation)
                old_mean, old_spread = self._normal.get(key, ((low + high) / 2, (high - low) / math.sqrt(12)))
                mean = SMOOTHING * mean + (1 - SMOOTHING) * old_mean
                spread = max(floor, SMOOTHING * spread + (1 - SMOOTHING) * old_spread)
                self._normal[key] = (mean, spread)
            else:
                counts = np.array([sum(v == c for v in values) for c in draw.values], dtype=float)
                p = counts / counts.sum()
                old = self._choice.get(key, np.full(len(draw.values), 1.0 / len(draw.values)))
                p = SMOOTHING * p + (1 - SMOOTHING) * old
                p = np.maximum(p, MIN_SPREAD / len(draw.values))
                self._choice[key] = p / p.sum()
