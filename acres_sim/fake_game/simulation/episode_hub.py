"""The episode's messages as they stand, and who hears them (ROS-free): the latched-message cache
and the fan-out to the control channel's watch connections, with one tap for the recorder.

The transient-local messages (the episode, the agents, the objects, the shifts, the conditions, the
markers) are
kept as they are now and handed to every new listener first; every step's contacts (the steps that
have any), farm events, farm stamps and agent states follow (the states last: a listener that has
them has the step's other messages too). The recorder (episode_recorder.py) is the tap: it sees
every message before the listeners do; observers (the marker board) hear each latched message and
each message of a step after them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Protocol

from acres_sim.episode.log_file import AGENTS, EPISODE, FARM_EVENTS, FARM_STAMPS, Topic, stamp_of


class EpisodeListener(Protocol):
    def publish(self, event: str, body: dict[str, Any]) -> None:
        """event: one of acres_sim.channels.control.EVENTS; never blocks."""


class EpisodeTap(Protocol):
    """What sees every message before the listeners (the recorder)."""

    @property
    def recording(self) -> bool: ...

    def latched(self, topic: Topic, message: dict[str, Any]) -> None: ...

    def step(self, farm_events: dict[str, Any], farm_stamps: dict[str, Any],
             states: dict[str, Any]) -> None: ...

    def message(self, topic: Topic, message: dict[str, Any]) -> None: ...


def header(t: float) -> dict[str, Any]:
    return {"stamp": stamp_of(t), "frame_id": ""}


def agent_states(step: int, t: float, states: list[dict[str, Any]]) -> dict[str, Any]:
    """The AgentStates message of one world step."""
    return {"header": header(t), "step": step, "agents": states}


class EpisodeHub:
    def __init__(self) -> None:
        self._lock = threading.Lock()  # listeners come and go on other threads
        self._listeners: list[EpisodeListener] = []
        self._gatherers: list[EpisodeListener] = []
        self.latched: dict[Topic, dict[str, Any]] = {EPISODE: {},
                                                     AGENTS: {"header": header(0.0), "agents": []}}
        self.revision = 0  # counts the changes of the latched messages
        self._changed: dict[str, int] = {}  # event -> the revision of its last change (0: as made)
        self.statuses: dict[str, dict[str, Any]] = {}  # event -> its body as it stands (recording)
        self.latest: dict[str, Any] | None = None  # the last AgentStates
        self.tap: EpisodeTap | None = None
        # Owners that follow other owners' messages (the markers follow the objects and the contacts).
        self.observers: list[Callable[[Topic, dict[str, Any]], None]] = []

    @property
    def episode(self) -> dict[str, Any]:
        return self.latched[EPISODE]

    @property
    def agents(self) -> dict[str, Any]:
        return self.latched[AGENTS]

    def set_latched(self, topic: Topic, message: dict[str, Any]) -> None:
        """A transient-local message changed (stamped with the world time of the change)."""
        self.latched[topic] = message
        self.revision += 1
        self._changed[topic.event] = self.revision
        if self.tap is not None:
            self.tap.latched(topic, message)
        self.publish(topic.event, message)
        for observer in self.observers:
            observer(topic, message)

    def latched_since(self, revision: int, events: tuple[str, ...]) -> dict[str, dict[str, Any]]:
        """Those of `events` among the latched messages that changed after `revision`."""
        return {t.event: m for t, m in self.latched.items()
                if t.event in events and self._changed.get(t.event, 0) > revision}

    def set_status(self, event: str, status: dict[str, Any], body: dict[str, Any] | None = None) -> None:
        """A status a new listener gets too; body (default: the status) is what goes out now."""
        self.statuses[event] = status
        self.publish(event, status if body is None else body)

    def message(self, topic: Topic, message: dict[str, Any]) -> None:
        """A message of the step being made that is not kept for new listeners (contacts)."""
        if self.tap is not None:
            self.tap.message(topic, message)
        self.publish(topic.event, message)
        for observer in self.observers:
            observer(topic, message)

    def step(self, step: int, t: float, states: list[dict[str, Any]], farm_events: dict[str, Any],
             farm_stamps: dict[str, Any]) -> None:
        """Every physics step (the world's lock held)."""
        message = agent_states(step, t, states)
        self.latest = message
        if self.tap is not None:
            self.tap.step(farm_events, farm_stamps, message)
        self.publish(FARM_EVENTS.event, farm_events)
        self.publish(FARM_STAMPS.event, farm_stamps)
        self.publish("states", message)

    def republish(self) -> int:
        """The last AgentStates out again (not to the tap: the log has them): the step, or -1."""
        latest = self.latest
        if latest is not None:
            self.publish("states", latest)
        return -1 if latest is None else int(latest["step"])

    def add_listener(self, listener: EpisodeListener, catch_up: bool = True) -> None:
        """A watcher: gets the latched messages, the statuses and the latest states at once, then
        every message. Without catch_up (a step request's summary): every message from now on, and
        it is not counted among the watchers."""
        with self._lock:
            (self._listeners if catch_up else self._gatherers).append(listener)
        if not catch_up:
            return
        for topic, message in self.latched.items():
            listener.publish(topic.event, message)
        for event, status in self.statuses.items():
            listener.publish(event, status)
        if self.latest is not None:
            listener.publish("states", self.latest)

    def wants(self, event: str) -> bool:
        """Whether a message of this event would be taken now: by the tap while it records, or by a
        watcher that asked for it (one that named no events takes every one)."""
        if self.tap is not None and self.tap.recording:
            return True
        with self._lock:
            listeners = list(self._listeners)
        return any(getattr(listener, "wants", lambda e: True)(event) for listener in listeners)

    @property
    def listener_count(self) -> int:
        with self._lock:
            return len(self._listeners)

    def remove_listener(self, listener: EpisodeListener) -> None:
        with self._lock:
            for listeners in (self._listeners, self._gatherers):
                if listener in listeners:
                    listeners.remove(listener)

    def publish(self, event: str, body: dict[str, Any]) -> None:
        with self._lock:
            listeners = self._listeners + self._gatherers
        for listener in listeners:
            listener.publish(event, body)
