"""An environment's options, checked in one place (ROS-free): what AcresParallelEnv and AcresEnv
take beside the scenario file and Gymnasium's render_mode. ValueError names the option and what it
takes."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acres_sim.learn.rewards import weights
from acres_sim.learn.session import READY_TIMEOUT_S
from acres_sim.scenario.processes import GamePorts

OBSERVATIONS = ("state", "lidar", "camera")
DEFAULT_OBSERVATIONS = ("state", "lidar")
DEFAULT_STEPS_PER_ACTION = 12
DEFAULT_LIDAR_COLUMNS = 180
DEFAULT_CAMERA_SIZE = (60, 80)  # height, width


@dataclass(frozen=True)
class EnvOptions:
    observations: tuple[str, ...]  # each kind once, in the order given
    steps_per_action: int
    reward_weights: dict[str, float]
    lidar_columns: int
    camera_size: tuple[int, int]
    sets: tuple[str, ...]  # the scenario file's overrides (KEY=VALUE)
    game_args: tuple[str, ...]
    start_spread: tuple[float, float, float]  # x_m, y_m, yaw_deg
    record: Path | None
    game: GamePorts | Mapping[str, Any] | None  # checked against the scenario's agents by GamePorts.of
    game_timeout_s: float

    @classmethod
    def checked(cls, observations: Sequence[str] = DEFAULT_OBSERVATIONS,
                steps_per_action: int = DEFAULT_STEPS_PER_ACTION, reward: Mapping[str, float] | None = None,
                lidar_columns: int = DEFAULT_LIDAR_COLUMNS,
                camera_size: tuple[int, int] = DEFAULT_CAMERA_SIZE,
                sets: Sequence[str] = (), game_args: Sequence[str] = (),
                start_spread: Sequence[float] = (0.0, 0.0, 0.0), record: str | Path | None = None,
                game: GamePorts | Mapping[str, Any] | None = None,
                game_timeout_s: float = READY_TIMEOUT_S) -> EnvOptions:
        unknown = [o for o in observations if o not in OBSERVATIONS]
        if unknown or not observations:
            raise ValueError(f"observations must be some of {', '.join(OBSERVATIONS)}, "
                             f"got {list(observations)}")
        if not (isinstance(steps_per_action, int) and steps_per_action >= 1):
            raise ValueError(f"steps_per_action must be a positive integer, got {steps_per_action!r}")
        spread = tuple(float(v) for v in start_spread)
        if len(spread) != 3 or not all(math.isfinite(v) and v >= 0.0 for v in spread):
            raise ValueError(f"start_spread is (x_m, y_m, yaw_deg), three numbers >= 0, got {start_spread!r}")
        if not (math.isfinite(game_timeout_s) and game_timeout_s > 0.0):
            raise ValueError(f"game_timeout_s must be a positive number of seconds, got {game_timeout_s!r}")
        return cls(observations=tuple(dict.fromkeys(observations)), steps_per_action=steps_per_action,
                   reward_weights=weights(reward), lidar_columns=int(lidar_columns),
                   camera_size=(int(camera_size[0]), int(camera_size[1])), sets=tuple(sets),
                   game_args=tuple(game_args), start_spread=(spread[0], spread[1], spread[2]),
                   record=Path(record) if record else None, game=game, game_timeout_s=float(game_timeout_s))
