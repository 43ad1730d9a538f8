"""sim_control's lockstep waits, ROS-free: the barriers a step waits for after the game stepped, and
the commands it waits for before. Both are fed from subscription callbacks on one thread and waited
on from service threads."""

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

    def __init__(self, agents: Iterable[str]):
        self._cond = threading.Condition()
        self._held: dict[str, tuple[float, str] | None] = {a: None for a in agents}  # None: unknown

    def update(self, agent: str, stamp_s: float, source: str) -> None:
        with self._cond:
            self._held[agent] = (stamp_s, source)
            self._cond.notify_all()

    def forget(self) -> None:
        """Before a reset: what the bridges said before it no longer counts (they say it again)."""
        with self._cond:
            for agent in self._held:
                self._held[agent] = None

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
