"""The reward of one agent's env step (ROS-free), from its task as the scenario's criteria judge it.

Terms (each weighted by REWARD_WEIGHTS, which the `reward` option overrides name by name):
  approach   m the agent came nearer its target this step (the `reach` criterion's centre, else
             nothing: 0)
  speed      its speed along its heading (m/s) times the step's seconds: distance driven forward
  contact    each of its contacts this step (a hit, or being hit)
  crop       the crop it crushed this step (m2)
  passed     once, when the last of its criteria passes
  failed     once, when one of its criteria fails
The episode's task status (TaskStatus) carries the reward and its running sum.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

REWARD_WEIGHTS = {"approach": 1.0, "speed": 0.0, "contact": -10.0, "crop": -0.1, "passed": 10.0,
                  "failed": -10.0}


def weights(overrides: Mapping[str, float] | None) -> dict[str, float]:
    out = dict(REWARD_WEIGHTS)
    for name, value in (overrides or {}).items():
        if name not in out:
            raise ValueError(f"reward: no term {name!r}; the terms are {', '.join(REWARD_WEIGHTS)}")
        out[name] = float(value)
    return out


@dataclass(frozen=True)
class StepOutcome:
    """What one agent's env step measured, before weighting."""

    approach_m: float
    forward_m: float
    contacts: int
    crop_m2: float
    passed: bool  # its criteria all passed in this step
    failed: bool  # one of them failed in this step

    def terms(self) -> dict[str, float]:
        return {"approach": self.approach_m, "speed": self.forward_m, "contact": float(self.contacts),
                "crop": self.crop_m2, "passed": float(self.passed), "failed": float(self.failed)}


def reward(outcome: StepOutcome, w: Mapping[str, float]) -> float:
    return float(sum(w[name] * value for name, value in outcome.terms().items()))
