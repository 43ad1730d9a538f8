"""The episode log being replayed (ROS-free): the world goes to the log's first step as at a fresh
start there (sensor epochs and the INS error process from time 0, as a reset ALL) and the logged
agents follow their states step by step (their knots added to the tracks the sensors follow, so
every frame is drawn from the logged motion); the logged objects, shifts and conditions are applied
and the logged contacts repeated as they fall due. Past the log's end the agents hold its last
state; a stop, or any reset but SPAWNED, ends the replay with the agents where it left them,
simulated from there."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from acres_sim.channels.control import BadRequest, file_name
from acres_sim.episode.log_file import CONTACTS, EpisodeLog, read_episode
from acres_sim.fake_game.simulation.agent_states import knot_of
from acres_sim.fake_game.simulation.episode_hub import EpisodeHub
from acres_sim.fake_game.simulation.session_agent import SessionAgent
from acres_sim.fake_game.simulation.state_publisher import AgentStatePublisher
from acres_sim.fake_game.simulation.step_owner import ResetContext, StepContext, StepOwner, WorldLoop
from acres_sim.fake_game.simulation.world_clock import world_time
from acres_sim.fake_game.simulation.world_requests import WorldRequests
from acres_sim.fake_game.world.motion import DrivenMotion, HeldMotion

REPLAY = "replay"  # the watch event of the replay's status


@dataclass
class Replay:
    """An episode log being replayed: the logged states by world step."""

    log: EpisodeLog
    by_step: dict[int, dict[str, dict[str, Any]]]
    first_step: int
    last_step: int
    ended: bool = False
    world_next: int = 0  # the next of the log's world changes to apply
    contacts_next: int = 0  # the next of the log's contacts to repeat

    @staticmethod
    def of(log: EpisodeLog) -> Replay:
        by_step = {s.step: s.agents for s in log.steps}
        return Replay(log, by_step, log.steps[0].step, log.steps[-1].step)


def _standing(state: dict[str, Any]) -> dict[str, Any]:
    """A logged state held after the log's end: where it was, not moving."""
    zero = {"x": 0.0, "y": 0.0, "z": 0.0}
    return {**state, "twist": {"linear": zero, "angular": zero}, "speed_mps": 0.0, "yaw_rate_rad_s": 0.0}


class ReplayPlayer(StepOwner):
    def __init__(self, loop: WorldLoop, hub: EpisodeHub, world: WorldRequests, states: AgentStatePublisher):
        self._loop = loop
        self._hub = hub
        self._world = world
        self._states = states
        self.replay: Replay | None = None

    # -- requests (control channel) -------------------------------------------------------------

    def start(self, path: Any) -> dict[str, Any]:
        """Replay an episode log from its first step. Refused for agents this session lacks."""
        replay = self.load(file_name(path))  # read before holding the world: it takes a moment
        with self._loop.between_steps():
            self.begin(replay)
            return self.status()

    def stop(self) -> dict[str, Any]:
        with self._loop.between_steps():
            if self.replay is None:
                raise BadRequest("not replaying")
            self._end("stopped")
            return self.status()

    def status(self, t: float | None = None) -> dict[str, Any]:
        """The replay as it stands at world time t (default: the world's time now)."""
        t = self._loop.time_s if t is None else t
        replay = self.replay
        if replay is None:
            return {"replaying": False, "path": "", "start_s": 0.0, "end_s": 0.0, "time_s": t, "ended": False}
        return {"replaying": True, "path": str(replay.log.path), "start_s": replay.log.start_s,
                "end_s": replay.log.end_s, "time_s": t, "ended": replay.ended}

    def load(self, path: str) -> Replay:
        log = read_episode(path)  # EpisodeLogError says what is wrong with the file
        names = [a.name for a in self._loop.agents]
        unknown = [name for name in log.agent_names if name not in names]
        if unknown:
            raise BadRequest(f"{path}: agents {', '.join(unknown)} are not in this session "
                             f"(it has {', '.join(names)})")
        return Replay.of(log)

    def begin(self, replay: Replay) -> None:
        """(world held) The world at the log's first step, the logged agents on its states."""
        first = replay.first_step
        self._loop.reset_held("all", to_step=first, replay_of=str(replay.log.path))
        t = world_time(first)
        states = replay.by_step[first]
        for agent in self._loop.agents:
            state = states.get(agent.name)
            if state is not None:
                agent.replay_track = DrivenMotion(knot_of(state, t))
                agent.simulator.place(agent.replay_track)
        self.replay = replay
        self._apply_world_due(replay, t)
        self._states.refresh(first, t, states)
        self._loop.log(f"ACRES_FAKE_GAME_REPLAY path={replay.log.path} steps={first}..{replay.last_step}")
        self._hub.publish(REPLAY, self.status())

    # -- the world loop -------------------------------------------------------------------------

    def begin_step(self, step: StepContext) -> None:
        """The logged states of this step (step.replayed), their knots added to the tracks."""
        replay = self.replay
        if replay is None:
            return
        self._apply_world_due(replay, step.t)
        self._repeat_contacts_due(replay, step.t)
        logged = replay.by_step.get(step.step)
        if logged is None:
            if not replay.ended:
                replay.ended = True
                for agent in self._loop.agents:
                    if agent.replay_track is not None:
                        _hold(agent, world_time(replay.last_step))
                self._loop.log(f"ACRES_FAKE_GAME_REPLAY_ENDED path={replay.log.path} step={replay.last_step}")
                self._hub.publish(REPLAY, self.status(step.t))
            last = replay.by_step[replay.last_step]
            step.replayed = {name: _standing(state) for name, state in last.items()}
            return
        for agent in self._loop.agents:
            state = logged.get(agent.name)
            if state is not None and agent.replay_track is not None:
                agent.replay_track.add(knot_of(state, step.t))
        step.replayed = logged

    def before_reset(self, reset: ResetContext) -> None:
        if reset.scope != "spawned":
            self._end(f"reset {reset.scope}")

    def _end(self, reason: str) -> None:
        """(world held) The agents stay where the replay left them, simulated from there."""
        replay = self.replay
        if replay is None:
            return
        t = self._loop.time_s
        for agent in self._loop.agents:
            if agent.replay_track is not None:
                _hold(agent, t)
                agent.replay_track = None
        self.replay = None
        self._loop.log(f"ACRES_FAKE_GAME_REPLAY_STOPPED path={replay.log.path} reason={reason}")
        self._hub.publish(REPLAY, self.status())

    def _repeat_contacts_due(self, replay: Replay, t: float) -> None:
        """The logged contacts of the steps up to world time t, as they were published."""
        due = round(t * 1e9)
        contacts = replay.log.contacts
        while replay.contacts_next < len(contacts) and contacts[replay.contacts_next][0] <= due:
            self._hub.message(CONTACTS, contacts[replay.contacts_next][1])
            replay.contacts_next += 1

    def _apply_world_due(self, replay: Replay, t: float) -> None:
        """The logged objects, shifts and conditions due by world time t."""
        due = round(t * 1e9)
        changes = []
        world = replay.log.world
        while replay.world_next < len(world) and world[replay.world_next][0] <= due:
            _ns, topic, message = world[replay.world_next]
            replay.world_next += 1
            changes.append((topic, message))
        self._world.apply_logged(t, changes)


def _hold(agent: SessionAgent, t: float) -> None:
    pose = agent.simulator.body_pose(t)
    agent.simulator.place(HeldMotion(t, (float(pose.position[0]), float(pose.position[1]),
                                         float(pose.position[2])), pose.rotation))
