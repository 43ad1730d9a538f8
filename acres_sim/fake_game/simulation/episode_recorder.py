"""The episode log being recorded (ROS-free): the hub's tap, writing what it sees into an MCAP.

A recording logs, from the step it starts at: /sim/episode, the other transient-local messages as
they are, the states of the step the world is at (the first knot of a replay), then at every step
/clock, /sim/contacts (where there are any), /sim/farm_events, /sim/farm_stamps and
/sim/agent_states, and every change; for viewers, each agent's robot_description and /tf_static at
the start, /tf and each agent's joint_states at every step (acres_sim/description). The log time
never goes back, so a reset that takes the world clock back (TIME or ALL) finishes the file first.
A disk that fails ends the recording with what was written kept; the status says so.
"""

from __future__ import annotations

from typing import Any

from acres_sim.channels.control import file_name
from acres_sim.description.episode_views import VehicleViews
from acres_sim.episode.log_file import (
    AGENT_STATES,
    CLOCK,
    EPISODE,
    FARM_EVENTS,
    FARM_STAMPS,
    EpisodeLogError,
    EpisodeWriter,
    Topic,
    stamp_ns,
    stamp_of,
)
from acres_sim.fake_game.simulation.episode_hub import EpisodeHub
from acres_sim.fake_game.simulation.step_owner import ResetContext, StepOwner, WorldLoop
from acres_sim.stream.timing import PHYSICS_HZ

RECORDING = "recording"  # the watch event of the recording's status
IDLE = {"recording": False, "path": "", "message_count": 0, "duration_s": 0.0}


class EpisodeRecorder(StepOwner):
    def __init__(self, loop: WorldLoop, hub: EpisodeHub, source: str, world: str, seed: int):
        self._loop = loop
        self._hub = hub
        self._metadata = {"source": source, "world": world, "seed": str(seed)}
        self._writer: EpisodeWriter | None = None
        self._views: VehicleViews | None = None
        hub.tap = self
        hub.set_status(RECORDING, dict(IDLE))

    # -- requests (control channel) -------------------------------------------------------------

    @property
    def recording(self) -> bool:
        return self._writer is not None

    def start(self, path: Any) -> dict[str, Any]:
        path = file_name(path)
        with self._loop.between_steps():
            return self.start_held(path)

    def stop(self) -> dict[str, Any]:
        with self._loop.between_steps():
            return self.stop_held()

    def start_held(self, path: str) -> dict[str, Any]:
        """(world held) Open the log and write the episode, the latched messages and the states of
        the step the world is at; every later step follows."""
        if self._writer is not None:
            raise ValueError(f"already recording into {self._writer.path}: stop that first")
        hub = self._hub
        agents = hub.agents["agents"]
        metadata = {**self._metadata, "episode_id": hub.episode.get("episode_id", ""),
                    "agents": ",".join(a["name"] for a in agents),
                    "vehicles": ",".join(a["vehicle"] for a in agents),
                    "physics_step_s": repr(1.0 / PHYSICS_HZ)}
        views = VehicleViews(agents)
        writer = EpisodeWriter(path, metadata, viewing=views.topics)  # EpisodeLogError: the service says why
        t = self._loop.time_s
        try:
            writer.write(EPISODE, hub.episode, stamp_ns(hub.episode["header"]["stamp"]))
            for topic, message in hub.latched.items():  # as they are now, from now
                if topic is not EPISODE:
                    writer.write(topic, _restamped(message, t), stamp_ns(stamp_of(t)))
            for topic, message in views.latched(stamp_of(t)):
                writer.write(topic, message, stamp_ns(stamp_of(t)))
            if hub.latest is not None:
                ns = stamp_ns(hub.latest["header"]["stamp"])
                writer.write(CLOCK, {"clock": hub.latest["header"]["stamp"]}, ns)
                writer.write(AGENT_STATES, hub.latest, ns)
                for topic, message in views.step(hub.latest):
                    writer.write(topic, message, ns)
        except EpisodeLogError:
            writer.close()
            raise
        self._writer, self._views = writer, views
        self._loop.log(f"ACRES_FAKE_GAME_RECORDING path={writer.path}")
        status = self.status()
        hub.set_status(RECORDING, status)
        return status

    def stop_held(self, reason: str = "stopped") -> dict[str, Any]:
        writer = self._writer
        if writer is None:
            raise ValueError("not recording")
        self._writer = None
        summary = {"path": str(writer.path), "message_count": writer.message_count,
                   "duration_s": writer.duration_s, "reason": reason}
        try:
            writer.close()
        except EpisodeLogError as exc:
            self._loop.log(f"ACRES_FAKE_GAME_RECORDING_FAILED path={writer.path} error={exc}")
            self._hub.set_status(RECORDING, dict(IDLE), {**IDLE, "stopped": summary, "error": str(exc)})
            raise
        self._loop.log(f"ACRES_FAKE_GAME_RECORDED path={writer.path} messages={writer.message_count} "
                       f"duration_s={writer.duration_s:.3f} reason={reason}")
        self._hub.set_status(RECORDING, dict(IDLE), {**IDLE, "stopped": summary})
        return summary

    def status(self) -> dict[str, Any]:
        writer = self._writer
        if writer is None:
            return dict(IDLE)
        return {"recording": True, "path": str(writer.path), "message_count": writer.message_count,
                "duration_s": writer.duration_s}

    def close(self) -> None:
        """The session ends: a recording ends with its summary."""
        if self._writer is not None:
            try:
                self.stop_held("session ended")
            except EpisodeLogError:
                pass

    # -- the hub's tap and the reset ------------------------------------------------------------

    def latched(self, topic: Topic, message: dict[str, Any]) -> None:
        if self._writer is not None:
            header = message["header"] if "header" in message else message["markers"][0]["header"]
            self._write(((topic, message),), stamp_ns(header["stamp"]))

    def message(self, topic: Topic, message: dict[str, Any]) -> None:
        if self._writer is not None:
            self._write(((topic, message),), stamp_ns(message["header"]["stamp"]))

    def step(self, farm_events: dict[str, Any], farm_stamps: dict[str, Any], states: dict[str, Any]) -> None:
        if self._writer is not None:
            stamp = states["header"]["stamp"]
            views = self._views.step(states) if self._views is not None else []
            self._write(((CLOCK, {"clock": stamp}), (FARM_EVENTS, farm_events), (FARM_STAMPS, farm_stamps),
                         (AGENT_STATES, states), *views), stamp_ns(stamp))

    def before_reset(self, reset: ResetContext) -> None:
        if self._writer is not None and reset.scope in ("time", "all") and reset.step < reset.from_step:
            self.stop_held(f"reset {reset.scope}")  # the log time never goes back: it ends here
        elif self._views is not None:
            self._views.restart()  # the wheels do not spin through a jump

    def _write(self, messages: tuple[tuple[Topic, dict[str, Any]], ...], ns: int) -> None:
        writer = self._writer
        assert writer is not None
        try:
            for topic, message in messages:
                writer.write(topic, message, ns)
        except EpisodeLogError as exc:
            self._fail(writer, exc)

    def _fail(self, writer: EpisodeWriter, exc: EpisodeLogError) -> None:
        self._writer = None
        try:
            writer.close()  # what was written is kept, with a summary if the disk lets us
        except EpisodeLogError:
            pass
        self._loop.log(f"ACRES_FAKE_GAME_RECORDING_FAILED path={writer.path} error={exc}")
        stopped = {"path": str(writer.path), "message_count": writer.message_count,
                   "duration_s": writer.duration_s, "reason": "failed"}
        self._hub.set_status(RECORDING, dict(IDLE), {**IDLE, "error": str(exc), "stopped": stopped})


def _restamped(message: dict[str, Any], t: float) -> dict[str, Any]:
    """A latched message as it stands, stamped with the start of the log (a MarkerArray's stamps are
    its markers')."""
    if "header" in message:
        return dict(message, header=dict(message["header"], stamp=stamp_of(t)))
    return {**message, "markers": [dict(m, header=dict(m["header"], stamp=stamp_of(t)))
                                   for m in message.get("markers", [])]}
