"""How a feature of the fake world takes part in its steps (ROS-free): the session owns the clock,
the world's lock, pacing, step and reset; each feature (the replay player, the recorder, the world's
changes, the agent states, ...) is a StepOwner that the session calls at the points below, in the
order the owners were added, always with the world's lock held.

    begin_step(step)   before the agents move (a replay puts its logged agents on their states)
    moved(step)        every agent is at the step's pose; no frame of it is queued yet
    end_step(step)     the step's frames are queued and the world is at step.step
    before_reset(r)    the world is still as it was (a recording ends before the clock goes back)
    after_reset(r)     the world is reset to r.step; the Vehicle Bridges hear of it after this

A request that changes the world between steps takes the WorldLoop's between_steps(): the world's
lock with no render in flight. A new per-step feature is a new owner, not new lines in the session.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from acres_sim.fake_game.simulation.session_agent import SessionAgent
    from acres_sim.fake_game.world.scene import Scene


@dataclass
class StepContext:
    """One physics step as the owners see it."""

    step: int
    t: float  # world time of the step
    replayed: dict[str, dict[str, Any]] = field(default_factory=dict)  # agent -> its logged AgentState


@dataclass(frozen=True)
class ResetContext:
    scope: str  # time | state | all | spawned
    from_step: int  # where the world was
    step: int  # where it is (after_reset) or goes (before_reset)
    t: float  # world time of `step`
    replay_of: str = ""  # a reset that starts a replay: the log's path
    seed: int | None = None  # a reset ALL with a new seed


class StepOwner:
    """A feature of the world loop: override the points it acts at (the defaults do nothing)."""

    def begin_step(self, step: StepContext) -> None:
        pass

    def moved(self, step: StepContext) -> None:
        pass

    def end_step(self, step: StepContext) -> None:
        pass

    def before_reset(self, reset: ResetContext) -> None:
        pass

    def after_reset(self, reset: ResetContext) -> None:
        pass


class WorldLoop(Protocol):
    """What an owner may use of the session."""

    agents: list[SessionAgent]
    scene: Scene | None  # the scene the world launched with (once open)
    log: Callable[[str], None]

    @property
    def step_count(self) -> int:
        """The world step the world is at."""

    @property
    def time_s(self) -> float:
        """Its world time."""

    def between_steps(self) -> AbstractContextManager[None]:
        """The world held between two steps with no render in flight."""

    def holding(self) -> AbstractContextManager[None]:
        """The world's lock (not in the middle of a step), renders may be in flight: for reads."""

    def reset_held(self, scope: str, to_step: int = 0, replay_of: str = "", seed: int | None = None) -> None:
        """(inside between_steps) Reset the world as reset() does."""
