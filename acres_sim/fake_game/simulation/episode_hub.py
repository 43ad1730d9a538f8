"""The episode of a fake-game session (ROS-free): its id, who listens to the agents' states, the
episode log being recorded, and the one being replayed.

The session calls step() after every physics step with every agent's state (acres_interfaces
AgentState dicts) and the step's farm events and stamps; the hub hands them to its listeners (the
control channel's watch connections) and to the recorder, and so the transient-local messages when
they change (set_latched: the episode, the agents, the objects, the shifts, the conditions). A
recording logs, from the step it starts at: /sim/episode, the other transient-local messages as they
are, then at every step /clock, /sim/farm_events, /sim/farm_stamps and /sim/agent_states, and every
change. The log time never goes back, so a reset that takes the world clock back (TIME or ALL)
finishes the file first.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from typing import Any, Protocol

from acres_sim.episode.log_file import (
    AGENT_STATES,
    AGENTS,
    CLOCK,
    EPISODE,
    FARM_EVENTS,
    FARM_STAMPS,
    EpisodeLog,
    EpisodeLogError,
    EpisodeWriter,
    Topic,
    stamp_ns,
    stamp_of,
)
from acres_sim.fake_game.simulation.sinks import LogFn
from acres_sim.stream.timing import PHYSICS_HZ


class EpisodeListener(Protocol):
    def publish(self, event: str, body: dict[str, Any]) -> None:
        """event: episode | agents | states | recording | replay; never blocks."""


def header(t: float) -> dict[str, Any]:
    return {"stamp": stamp_of(t), "frame_id": ""}


def agent_states(step: int, t: float, states: list[dict[str, Any]]) -> dict[str, Any]:
    """The AgentStates message of one world step."""
    return {"header": header(t), "step": step, "agents": states}


@dataclass
class Replay:
    """An episode log being replayed: the logged states by world step."""

    log: EpisodeLog
    by_step: dict[int, dict[str, dict[str, Any]]]
    first_step: int
    last_step: int
    ended: bool = False
    world_next: int = 0  # the next of the log's world changes to apply

    @staticmethod
    def of(log: EpisodeLog) -> Replay:
        by_step = {s.step: s.agents for s in log.steps}
        return Replay(log, by_step, log.steps[0].step, log.steps[-1].step)


class EpisodeHub:
    def __init__(self, source: str, world: str, seed: int, log: LogFn):
        self.source, self.world, self.seed = source, world, int(seed)
        self._log = log
        self._lock = threading.Lock()  # listeners come and go on other threads
        self._listeners: list[EpisodeListener] = []
        self._count = 0
        # The transient-local messages as they are now: the episode, the agents, the world's changes
        self.latched: dict[Topic, dict[str, Any]] = {EPISODE: {},
                                                     AGENTS: {"header": header(0.0), "agents": []}}
        self.latest: dict[str, Any] | None = None  # the last AgentStates
        self._writer: EpisodeWriter | None = None
        self.replay: Replay | None = None

    # -- the episode -----------------------------------------------------------------------------

    @property
    def episode(self) -> dict[str, Any]:
        return self.latched[EPISODE]

    @property
    def agents(self) -> dict[str, Any]:
        return self.latched[AGENTS]

    def set_agents(self, infos: list[dict[str, Any]], t: float) -> None:
        self.set_latched(AGENTS, {"header": header(t), "agents": infos})

    def new_episode(self, t: float, replay_of: str = "") -> None:
        self._count += 1
        self.set_latched(EPISODE, {
            "header": header(t),
            "episode_id": f"{self.source}-{self.seed}-{os.getpid()}-{int(time.time())}-{self._count}",
            "source": self.source, "world": self.world, "seed": self.seed,
            "physics_step_s": 1.0 / PHYSICS_HZ, "replay_of": replay_of,
        })

    def set_latched(self, topic: Topic, message: dict[str, Any]) -> None:
        """A transient-local message changed (stamped with the world time of the change): to the
        log and the listeners."""
        self.latched[topic] = message
        if self._writer is not None:
            try:
                self._writer.write(topic, message, stamp_ns(message["header"]["stamp"]))
            except EpisodeLogError as exc:
                self._fail_recording(exc)
        self._publish(topic.event, message)

    def step(self, step: int, t: float, states: list[dict[str, Any]], farm_events: dict[str, Any],
             farm_stamps: dict[str, Any]) -> None:
        """Every physics step (the session's world lock held); the states go last: a listener that
        has them has the step's farm messages too."""
        message = agent_states(step, t, states)
        self.latest = message
        writer = self._writer
        if writer is not None:
            try:
                ns = stamp_ns(message["header"]["stamp"])
                writer.write(CLOCK, {"clock": message["header"]["stamp"]}, ns)
                writer.write(FARM_EVENTS, farm_events, ns)
                writer.write(FARM_STAMPS, farm_stamps, ns)
                writer.write(AGENT_STATES, message, ns)
            except EpisodeLogError as exc:
                self._fail_recording(exc)
        self._publish(FARM_EVENTS.event, farm_events)
        self._publish(FARM_STAMPS.event, farm_stamps)
        self._publish("states", message)

    # -- listeners -------------------------------------------------------------------------------

    def add_listener(self, listener: EpisodeListener) -> None:
        """A new listener gets the episode, the agents and the latest states at once."""
        with self._lock:
            self._listeners.append(listener)
        for topic, message in self.latched.items():
            listener.publish(topic.event, message)
        listener.publish("recording", self.recording_status())
        if self.latest is not None:
            listener.publish("states", self.latest)

    def remove_listener(self, listener: EpisodeListener) -> None:
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)

    def _publish(self, event: str, body: dict[str, Any]) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            listener.publish(event, body)

    # -- recording -------------------------------------------------------------------------------

    @property
    def recording(self) -> bool:
        return self._writer is not None

    def start_recording(self, path: str, t: float) -> dict[str, Any]:
        """Open the log and write the episode, the agents and the states of the step the world is
        at (the first knot of a replay); every later step follows."""
        if self._writer is not None:
            raise ValueError(f"already recording into {self._writer.path}: stop that first")
        names = [a["name"] for a in self.agents["agents"]]
        metadata = {
            "source": self.source, "episode_id": self.episode.get("episode_id", ""),
            "agents": ",".join(names),
            "vehicles": ",".join(a["vehicle"] for a in self.agents["agents"]),
            "physics_step_s": repr(1.0 / PHYSICS_HZ), "world": self.world, "seed": str(self.seed),
        }
        writer = EpisodeWriter(path, metadata)  # EpisodeLogError: the service says why
        try:
            writer.write(EPISODE, self.episode, stamp_ns(self.episode["header"]["stamp"]))
            for topic, message in self.latched.items():  # as they are now, from now
                if topic is not EPISODE:
                    writer.write(topic, dict(message, header=dict(message["header"], stamp=stamp_of(t))),
                                 stamp_ns(stamp_of(t)))
            if self.latest is not None:
                ns = stamp_ns(self.latest["header"]["stamp"])
                writer.write(CLOCK, {"clock": self.latest["header"]["stamp"]}, ns)
                writer.write(AGENT_STATES, self.latest, ns)
        except EpisodeLogError:
            writer.close()
            raise
        self._writer = writer
        self._log(f"ACRES_FAKE_GAME_RECORDING path={writer.path}")
        status = self.recording_status()
        self._publish("recording", status)
        return status

    def stop_recording(self, reason: str = "stopped") -> dict[str, Any]:
        writer = self._writer
        if writer is None:
            raise ValueError("not recording")
        self._writer = None
        summary = {"path": str(writer.path), "message_count": writer.message_count,
                   "duration_s": writer.duration_s, "reason": reason}
        try:
            writer.close()
        except EpisodeLogError as exc:
            self._log(f"ACRES_FAKE_GAME_RECORDING_FAILED path={writer.path} error={exc}")
            self._publish("recording", {**self.recording_status(), "stopped": summary, "error": str(exc)})
            raise
        self._log(f"ACRES_FAKE_GAME_RECORDED path={writer.path} messages={writer.message_count} "
                  f"duration_s={writer.duration_s:.3f} reason={reason}")
        self._publish("recording", {**self.recording_status(), "stopped": summary})
        return summary

    def _fail_recording(self, exc: EpisodeLogError) -> None:
        writer = self._writer
        self._writer = None
        assert writer is not None
        try:
            writer.close()  # what was written is kept, with a summary if the disk lets us
        except EpisodeLogError:
            pass
        self._log(f"ACRES_FAKE_GAME_RECORDING_FAILED path={writer.path} error={exc}")
        stopped = {"path": str(writer.path), "message_count": writer.message_count,
                   "duration_s": writer.duration_s, "reason": "failed"}
        self._publish("recording", {**self.recording_status(), "error": str(exc), "stopped": stopped})

    def recording_status(self) -> dict[str, Any]:
        writer = self._writer
        if writer is None:
            return {"recording": False, "path": "", "message_count": 0, "duration_s": 0.0}
        return {"recording": True, "path": str(writer.path), "message_count": writer.message_count,
                "duration_s": writer.duration_s}

    def close(self) -> None:
        if self._writer is not None:
            try:
                self.stop_recording("session ended")
            except EpisodeLogError:
                pass

    # -- replay ----------------------------------------------------------------------------------

    def replay_status(self, t: float) -> dict[str, Any]:
        replay = self.replay
        if replay is None:
            return {"replaying": False, "path": "", "start_s": 0.0, "end_s": 0.0, "time_s": t, "ended": False}
        return {"replaying": True, "path": str(replay.log.path), "start_s": replay.log.start_s,
                "end_s": replay.log.end_s, "time_s": t, "ended": replay.ended}

    def replay_event(self, t: float) -> None:
        self._publish("replay", self.replay_status(t))
