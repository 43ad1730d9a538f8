"""sim_control's lockstep, ROS-free: the barriers a step waits for after the game stepped, the
commands it waits for before, and the stepping rules over both (Lockstep). The watches are fed from
subscription callbacks on one thread and waited on from service threads."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterable

from acres_sim.topics import HELD_AWAITING

SEEN_PER_AGENT = 64  # barriers remembered per agent: far more than one request waits for


class BarrierWatch:
    """The barrier steps each agent's bridge published, numbered in arrival order, so that a
    request can wait for the barriers that arrive after it was sent (a TIME reset makes step
    numbers repeat)."""

    def __init__(self, agents: Iterable[str]):
        self._cond = threading.Condition()
        self._count = 0
        self._seen: dict[str, deque[tuple[int, int]]] = {a: deque(maxlen=SEEN_PER_AGENT) for a in agents}

    def mark(self) -> int:
        """Where the arrivals stand now: wait(since=mark()) counts only what comes after."""
        with self._cond:
            return self._count

    def arrived(self, agent: str, step: int) -> None:
        with self._cond:
            self._count += 1
            self._seen[agent].append((self._count, step))
            self._cond.notify_all()

    def wait(self, step: int, since: int, timeout_s: float) -> list[str]:
        """Wait until every agent's barrier of `step` arrived after mark `since`; the agents still
        missing when timeout_s ran out (empty: all arrived)."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while True:
                missing = [agent for agent, seen in self._seen.items()
                           if not any(n > since and s == step for n, s in seen)]
                left = deadline - time.monotonic()
                if not missing or left <= 0:
                    return missing
                self._cond.wait(left)


class HeldCommands:
    """Each agent's vehicle/held_command: the stamp of the command its vehicle holds, and the source
    that drives it ("" none under command; HELD_AWAITING: under command, nothing since a reset)."""

    def __init__(self, agents: Iterable[str], clock: Callable[[], float] = time.monotonic):
        self._cond = threading.Condition()
        self._clock = clock
        self._held: dict[str, tuple[float, str] | None] = {a: None for a in agents}  # None: unknown
        self._changed: dict[str, float] = {a: clock() for a in self._held}  # when each last changed
        self._version = 0

    def update(self, agent: str, stamp_s: float, source: str) -> None:
        with self._cond:
            if self._held[agent] != (stamp_s, source):
                self._changed[agent] = self._clock()
            self._held[agent] = (stamp_s, source)
            self._version += 1
            self._cond.notify_all()

    def snapshot(self) -> tuple[int, dict[str, tuple[float, str, float] | None]]:
        """(version, agent -> (stamp, source, when it last changed) or None while unknown)."""
        with self._cond:
            return self._version, {a: None if h is None else (h[0], h[1], self._changed[a])
                                   for a, h in self._held.items()}

    def wait_change(self, version: int, timeout_s: float) -> None:
        """Until an update after `version` (a snapshot's), or timeout_s."""
        with self._cond:
            self._cond.wait_for(lambda: self._version != version, timeout_s)

    def forget(self) -> None:
        """Before a reset: what the bridges said before it no longer counts (they say it again)."""
        with self._cond:
            for agent in self._held:
                self._held[agent] = None

    def commanded(self) -> set[str]:
        """The agents under command (their vehicle holds a command, or awaits one after a reset)."""
        with self._cond:
            return {a for a, h in self._held.items() if h is not None and h[1] != ""}

    def known(self) -> bool:
        """Every agent's vehicle_bridge has said what its vehicle holds (it is up)."""
        with self._cond:
            return all(h is not None for h in self._held.values())

    def stamps(self) -> dict[str, float]:
        """The stamp of the command each agent under command holds."""
        with self._cond:
            return {a: h[0] for a, h in self._held.items() if h is not None and h[1] != ""}

    def under_command(self) -> bool:
        """Any agent under command, or not yet heard of (then a step waits for it)."""
        with self._cond:
            return any(h is None or h[1] != "" for h in self._held.values())

    def _late(self, now: float) -> list[str]:
        """The agents whose command a step at world time `now` still waits for (caller holds the lock)."""
        return [a for a, h in self._held.items()
                if h is None or h[1] == HELD_AWAITING or (h[1] != "" and h[0] < now - 1e-6)]

    def wait(self, now: float, timeout_s: float) -> list[str]:
        """Wait until every agent under command holds a command stamped at or after `now`; the
        agents still late when timeout_s ran out."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while True:
                missing = self._late(now)
                left = deadline - time.monotonic()
                if not missing or left <= 0:
                    return missing
                self._cond.wait(left)


class PublishersMatched:
    """Whether each barrier subscription has a publisher, and has had it for settle_s: a writer
    sends a barrier only to the readers it has matched, and the writer's side of a match can come a
    moment after the reader's, so a request made while the nodes are still discovering each other
    waits here instead of missing its barrier. `counts`: topic -> its subscription's publisher count."""

    def __init__(self, counts: dict[str, Callable[[], int]], settle_s: float = 0.25,
                 clock: Callable[[], float] = time.monotonic, poll_s: float = 0.01):
        self._counts = counts
        self._settle_s = settle_s
        self._clock = clock
        self._poll_s = poll_s
        self._since: dict[str, float] = {}  # topic -> when a publisher was first seen, uninterrupted

    @property
    def topics(self) -> list[str]:
        return list(self._counts)

    def wait(self, topics: Iterable[str], timeout_s: float) -> list[str]:
        """The topics still without a settled publisher when timeout_s ran out (empty: all have)."""
        deadline = self._clock() + timeout_s
        topics = list(topics)
        while True:
            now = self._clock()
            for topic in topics:
                if self._counts[topic]() > 0:
                    self._since.setdefault(topic, now)
                else:
                    self._since.pop(topic, None)
            missing = [t for t in topics if t not in self._since or now - self._since[t] < self._settle_s]
            if not missing or now >= deadline:
                return missing
            time.sleep(self._poll_s)


class LockstepFailed(Exception):
    """A step or reset that could not be completed: the message says why (for error_message)."""


# (steps) -> (world step reached, its world time): one request to the game, answered after its barriers
StepGame = Callable[[int], tuple[int, float]]


class Lockstep:
    """sim_control's stepping rules, ROS-free: before the game steps, every barrier the request
    will wait for has a publisher and every agent under command holds a command for the world time
    (bounded by command_wait_s, then a warning); after each game request of at most `chunk` steps,
    every agent's sim/barrier (and vehicle/barrier) of the step reached, and the step's agent states
    when `delivered` says they are awaited. One stepping request at a time."""

    def __init__(self, barriers: BarrierWatch, vehicle_barriers: BarrierWatch, held: HeldCommands,
                 matched: PublishersMatched, barrier_timeout_s: float, command_wait_s: float,
                 warn: Callable[[str], None], vehicle_suffix: str):
        self.barriers, self.vehicle_barriers = barriers, vehicle_barriers
        self.held, self.matched = held, matched
        self.barrier_timeout_s = barrier_timeout_s
        self.command_wait_s = command_wait_s
        self._warn = warn
        self._vehicle_suffix = vehicle_suffix  # the topic name's end of a vehicle barrier
        self.lock = threading.Lock()  # one stepping request at a time: barriers per request
        self.world_time_s: float | None = None  # known after a step; None: ask the game

    def steps(self, steps: int, chunk: int, step_game: StepGame, world_time_now: Callable[[], float],
              after_chunk: Callable[[int], bool] | None = None,
              delivered: Callable[[int, float], bool] | None = None) -> int:
        """Run `steps` in game requests of at most `chunk`. after_chunk(done) -> False stops between
        chunks; delivered(step, timeout_s) -> False: the step's states did not come. Returns the steps
        done."""
        done = 0
        with self.lock:
            self._wait_publishers(self.matched.topics)
            self._wait_commands(world_time_now)
            while done < steps:
                n = min(chunk, steps - done)
                since, vehicle_since = self.barriers.mark(), self.vehicle_barriers.mark()
                reached, self.world_time_s = step_game(n)
                done += n
                what = f"the game did {done} of {steps} steps (world step {reached})"
                self._wait_barriers(reached, since, vehicle_since, what)
                if delivered is not None and not delivered(reached, self.barrier_timeout_s):
                    raise LockstepFailed(
                        f"{what}, but its agent states were not published within "
                        f"{self.barrier_timeout_s:g} s "
                        "(is the episode feed of the control channel connected?)")
                if after_chunk is not None and not after_chunk(done):
                    break
        return done

    def reset(self, scope: str, reset_game: Callable[[], int], before: Callable[[], None]) -> None:
        """A reset: the vehicle barriers it waits for have publishers, what the bridges held before
        no longer counts (before() forgets the rest), and every vehicle/barrier of the reset comes."""
        with self.lock:
            self._wait_publishers([t for t in self.matched.topics if t.endswith(self._vehicle_suffix)])
            self.world_time_s = None
            self.held.forget()
            before()
            vehicle_since = self.vehicle_barriers.mark()
            reached = reset_game()
            missing = self.vehicle_barriers.wait(reached, vehicle_since, self.barrier_timeout_s)
            if missing:
                raise LockstepFailed(
                    f"the world was reset ({scope}), but no vehicle/barrier came within "
                    f"{self.barrier_timeout_s:g} s from: {', '.join(missing)} (is its vehicle_bridge running "
                    "and connected?)")

    def _wait_publishers(self, barriers: list[str]) -> None:
        missing = self.matched.wait(barriers, self.barrier_timeout_s)
        if missing:
            raise LockstepFailed(
                f"nothing publishes {', '.join(missing)} (waited {self.barrier_timeout_s:g} s): is each "
                "agent's sim_bridge (and vehicle_bridge) running?")

    def _wait_barriers(self, step: int, since: int, vehicle_since: int, what: str) -> None:
        missing = self.barriers.wait(step, since, self.barrier_timeout_s)
        if missing:
            raise LockstepFailed(
                f"{what}, but no sim/barrier came within {self.barrier_timeout_s:g} s from: "
                f"{', '.join(missing)} (is its sim_bridge running and connected?)")
        missing = self.vehicle_barriers.wait(step, vehicle_since, self.barrier_timeout_s)
        if missing:
            raise LockstepFailed(
                f"{what}, but no vehicle/barrier came within {self.barrier_timeout_s:g} s from: "
                f"{', '.join(missing)} (is its vehicle_bridge running and connected?)")

    def _wait_commands(self, world_time_now: Callable[[], float]) -> None:
        """The lockstep rule: each agent under command holds a command stamped at or after the
        world time before the game steps (bounded by command_wait_s)."""
        if self.command_wait_s <= 0 or not self.held.under_command():
            return  # the caller waits by a rule of its own (the scenario runner's)
        if self.world_time_s is None:
            self.world_time_s = world_time_now()
        late = self.held.wait(self.world_time_s, self.command_wait_s)
        if late:
            self._warn(
                f"no command stamped at or after world time {self.world_time_s:.4f} s held for "
                f"{', '.join(late)} within {self.command_wait_s:g} s: stepping with what the vehicle holds "
                "(publish a command before each step; vehicle/disable ends being under command)")
