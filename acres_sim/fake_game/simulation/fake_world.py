"""The fake world of one run (ROS-free): the session (clock, lock, steps, resets) and the owners
that act at its steps, put together in their order, with what the control channel asks of them.

Owners, in the order the session calls them: the episode's id and agents (EpisodeInfo), the replay
player, the world's changes and entity requests (WorldRequests), the collisions (which also check
placements), the marker board (the objects and the recent contacts as markers), the agent states
(the hub's per-step messages), the recorder (the hub's tap). A new feature is a new owner added here.
"""

from __future__ import annotations

from typing import Any

from acres_sim.channels.control import SUMMARY_LATCHED, BadRequest, UnknownEntity
from acres_sim.episode.cdr import CdrError
from acres_sim.episode.log_file import CODEC, TASK
from acres_sim.fake_game.simulation.collisions import Collisions
from acres_sim.fake_game.simulation.episode_hub import EpisodeHub, EpisodeListener, header
from acres_sim.fake_game.simulation.episode_info import EpisodeInfo
from acres_sim.fake_game.simulation.episode_recorder import EpisodeRecorder
from acres_sim.fake_game.simulation.marker_board import MarkerBoard
from acres_sim.fake_game.simulation.replay_player import ReplayPlayer
from acres_sim.fake_game.simulation.session import Session
from acres_sim.fake_game.simulation.session_config import SessionConfig
from acres_sim.fake_game.simulation.sinks import LogFn, OpenStream, OpenVehicle, stdout_log
from acres_sim.fake_game.simulation.state_publisher import AgentStatePublisher
from acres_sim.fake_game.simulation.step_summary import StepSummary
from acres_sim.fake_game.simulation.world_requests import WorldRequests

SOURCE = "fake_game"  # the Episode's source
WORLD_NAME = "acres_farm_loop"  # the fake world's one map


class FakeWorld:
    def __init__(self, config: SessionConfig, open_stream: OpenStream, log: LogFn = stdout_log,
                 open_vehicle: OpenVehicle | None = None):
        self.session = Session(config, open_stream, log, open_vehicle)
        self.hub = EpisodeHub()

    def start(self) -> None:
        """Open the agents, put the owners together, open the episode files the config names, run."""
        session, hub, cfg = self.session, self.hub, self.session.config
        session.open()
        try:
            self.episode = EpisodeInfo(hub, session.agents, SOURCE, WORLD_NAME, cfg.seed)
            self.markers = MarkerBoard(hub)  # hears the objects and the contacts from the start
            self.world = WorldRequests(session, hub)
            self.collisions = Collisions(session, hub, self.world.changes)
            self.world.check_agent = self.collisions.check_agent
            self.world.changes.check_object = self.collisions.check_object
            self.states = AgentStatePublisher(hub, session.agents)
            self.world.placed = lambda: self.states.refresh(session.step_count, session.time_s)
            self.replay = ReplayPlayer(session, hub, self.world, self.states)
            self.recorder = EpisodeRecorder(session, hub, SOURCE, WORLD_NAME, cfg.seed)
            for owner in (self.episode, self.replay, self.world, self.collisions, self.markers, self.states,
                          self.recorder):
                session.add_owner(owner)
            if cfg.episode_replay:  # a bad file stops the start with its error
                self.replay.begin(self.replay.load(cfg.episode_replay))
            if cfg.episode_log:
                self.recorder.start_held(cfg.episode_log)
        except BaseException:
            session.stop()
            raise
        session.run()

    def stop(self) -> None:
        self.session.stop()

    # -- the episode (control channel) ------------------------------------------------------------

    def watch(self, listener: EpisodeListener) -> None:
        """listener gets the episode, the agents, the recording and every step's agent states."""
        with self.session.holding():  # its first states are those of the step the world is at
            self.hub.add_listener(listener)

    def step(self, steps: Any, paused_only: bool, summary: bool, latched_since: Any = -1) -> dict[str, Any]:
        """A step request's answer: the step and time reached and, asked for, the steps' summary
        with the judge's latched messages that changed after revision `latched_since`."""
        if not summary:
            step, time_s = self.session.step(steps, paused_only)
            return {"step": step, "time_s": time_s}
        if isinstance(latched_since, bool) or not isinstance(latched_since, int):
            raise BadRequest(f"latched_since must be a revision number, got {latched_since!r}")
        gathered = StepSummary()
        self.hub.add_listener(gathered, catch_up=False)
        try:
            step, time_s = self.session.step(steps, paused_only, on_start=gathered.start)
        finally:
            self.hub.remove_listener(gathered)
        with self.session.holding():
            latched = self.hub.latched_since(latched_since, SUMMARY_LATCHED)
            revision = self.hub.revision
        return {"step": step, "time_s": time_s, "summary": {**gathered.body(), "latched": latched,
                                                            "revision": revision}}

    def unwatch(self, listener: EpisodeListener) -> None:
        self.hub.remove_listener(listener)

    def publish_task(self, status: Any) -> None:
        """A TaskStatus (a dict of its fields) to the watchers and the episode log, stamped with the
        world time the world is at (the log's time never goes back)."""
        if not isinstance(status, dict):
            raise BadRequest(f"status must be a TaskStatus object, got {status!r}")
        agents = [a.name for a in self.session.agents]
        if status.get("agent") not in agents:
            raise UnknownEntity(f"no agent {status.get('agent')!r}; the agents are {', '.join(agents)}")
        try:
            CODEC.encode(TASK.type, status)  # the fields and their types, as the log will take them
        except (CdrError, KeyError, TypeError, ValueError, OverflowError) as exc:
            raise BadRequest(f"status is not a TaskStatus: {exc!r}") from None
        with self.session.holding():  # between two steps' messages, stamped with the world's time
            self.hub.message(TASK, {**status, "header": header(self.session.time_s)})

    def republish_states(self) -> int:
        """The latest step's states out again, between two steps (never after a newer step's)."""
        with self.session.holding():
            return self.hub.republish()

    def episode_status(self) -> dict[str, Any]:
        with self.session.holding():
            return {"episode_id": self.episode.episode_id, "recording": self.recorder.status(),
                    "replay": self.replay.status()}
