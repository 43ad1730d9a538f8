"""The learners' environments over a scenario file (ROS-free): AcresParallelEnv, a PettingZoo
ParallelEnv whose agents are the scenario's vehicles (those without waypoints: the scripted ones are
driven along theirs), and AcresEnv, a Gymnasium Env for one of them (`gymnasium.make
("acres_sim/Scenario-v0", scenario=PATH, agent=NAME)`).

Each environment owns its world (acres_sim/learn/session.py), started at the first reset. An action
is (speed, steering) in [-1, 1]: speed x the vehicle's top speed forward (x its top reverse speed
backwards), steering x its largest road-wheel angle. A step is `steps_per_action` physics steps
(default 12: 10 Hz) in lockstep. The rewards are rewards.py's; an agent's episode terminates once
its task is decided (every criterion passed, or one failed) and is truncated at the scenario's
duration. reset(seed) is the game's
reset to the scenario's start with every random process from that seed: the same seed and the same
actions give the same observations and rewards. `start_spread` (x_m, y_m, yaw_deg) draws each
learner-driven agent's start from the episode's seed, uniformly within that much of the scenario's
pose (default none: the scenario's start). `record` (a directory): each episode's log is written
there (episode_NNNNN_seedS.mcap, the game's episode log: it opens in Foxglove), with every
agent's TaskStatus of every step (its reward and return). A world that dies truncates every agent's episode
(info "session_error" says why) and the next reset starts a fresh one. `game` (GamePorts, or a dict
of its fields): a game already running, connected to instead of a fake game of its own, and left
running by close(); `game_timeout_s`: how long a game may take to answer at the start.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium import Env, spaces
from gymnasium.utils import seeding

from acres_sim.fake_game.simulation.vehicles import vehicle_hello
from acres_sim.learn.observations import AgentView, observation_kinds
from acres_sim.learn.rewards import StepOutcome, reward
from acres_sim.learn.options import (
    DEFAULT_CAMERA_SIZE,
    DEFAULT_LIDAR_COLUMNS,
    DEFAULT_OBSERVATIONS,
    DEFAULT_STEPS_PER_ACTION,
    EnvOptions,
)
from acres_sim.learn.session import READY_TIMEOUT_S, GamePorts, LearnerSession, SessionFailed
from acres_sim.scenario.model import Pose2D, Scenario
from acres_sim.scenario.scenario_file import load
from acres_sim.scenario.scripted import WaypointDriver, scripted_commands
from acres_sim.stream.timing import PHYSICS_HZ

try:
    from pettingzoo import ParallelEnv
except ImportError:  # the Gymnasium environment does not need it
    ParallelEnv = object

RENDER_PIXELS, RENDER_M_PER_PIXEL = 256, 0.25


class AcresParallelEnv(ParallelEnv):
    metadata = {"render_modes": ["rgb_array"], "name": "acres_sim_scenario_v0", "is_parallelizable": True}

    def __init__(self, scenario: str | Path, observations: Sequence[str] = DEFAULT_OBSERVATIONS,
                 steps_per_action: int = DEFAULT_STEPS_PER_ACTION, render_mode: str | None = None,
                 reward: Mapping[str, float] | None = None, lidar_columns: int = DEFAULT_LIDAR_COLUMNS,
                 camera_size: tuple[int, int] = DEFAULT_CAMERA_SIZE, sets: Sequence[str] = (),
                 game_args: Sequence[str] = (), start_spread: Sequence[float] = (0.0, 0.0, 0.0),
                 record: str | Path | None = None, game: GamePorts | Mapping[str, Any] | None = None,
                 game_timeout_s: float = READY_TIMEOUT_S):
        options = EnvOptions.checked(observations, steps_per_action, reward, lidar_columns, camera_size, sets,
                                     game_args, start_spread, record, game, game_timeout_s)
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        self.options = options
        self.scenario: Scenario = load(scenario, list(options.sets))
        if options.record is not None:
            options.record.mkdir(parents=True, exist_ok=True)
        self.episodes = 0
        self.metadata = {**self.metadata, "render_fps": PHYSICS_HZ / options.steps_per_action}
        self.render_mode = render_mode
        # the scenario's agents are known now: a given game's ports are checked against them
        self.game = GamePorts.of(game, [a.name for a in self.scenario.agents]) if game is not None else None
        self.possible_agents = [a.name for a in self.scenario.agents if not a.waypoints]
        self._scripted = [a for a in self.scenario.agents if a.waypoints]
        judged = set(self.scenario.judged_agents)
        untasked = [a for a in self.possible_agents if a not in judged]
        if not self.possible_agents or untasked:
            raise ValueError(f"{self.scenario.path}: every agent a learner drives needs a task (a criterion "
                             f"that names it); {', '.join(untasked) or 'no agent'} has none")
        if "camera" in self.options.observations:
            blind = [a.name for a in self.scenario.agents
                     if a.name in self.possible_agents and not vehicle_hello(a.vehicle).camera.enabled]
            if blind:
                raise ValueError(f"observations: camera, but {', '.join(blind)} has no camera")
        self.agents: list[str] = []
        self._kinds = observation_kinds(self.options.observations, self.options.lidar_columns,
                                        self.options.camera_size)
        self._observation_spaces = {a: self._observation_space(a) for a in self.possible_agents}
        self._action_space = spaces.Box(-1.0, 1.0, (2,), np.float32)
        self._session: LearnerSession | None = None
        self._rng, _ = seeding.np_random(self.scenario.seed)
        self._targets = {a.name: self._target(a.name) for a in self.scenario.agents}
        self._t0 = 0.0
        self._t = 0.0
        self._was_decided: dict[str, bool] = {}
        self._distance: dict[str, float] = {}
        self._returns: dict[str, float] = {}

    # -- spaces -----------------------------------------------------------------------------------

    def observation_space(self, agent: str) -> spaces.Dict:
        return self._observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Box:
        return self._action_space

    def _observation_space(self, agent: str) -> spaces.Dict:
        hello = vehicle_hello(self.scenario.agent(agent).vehicle)
        return spaces.Dict({kind.name: kind.space(hello) for kind in self._kinds})

    def _target(self, agent: str) -> tuple[float, float]:
        """The agent's reach criterion's centre, else its start."""
        for c in self.scenario.criteria:
            if c.kind == "reach" and c.agent == agent:
                return float(c.params["x"]), float(c.params["y"])
        pose = self.scenario.agent(agent).pose
        return pose.x, pose.y

    # -- the episode ------------------------------------------------------------------------------

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        if seed is not None:
            self._rng, _ = seeding.np_random(seed)
        episode_seed = int(self._rng.integers(0, 2**31 - 1))
        if self._session is None or not self._session.alive:
            self.close()
            o = self.options
            self._session = LearnerSession(self.scenario, o.observations, o.lidar_columns,
                                           o.camera_size if "camera" in o.observations else None,
                                           o.game_args, timeout_s=o.game_timeout_s, given=self.game)
        log = None
        if self.options.record is not None:
            name = f"episode_{self.episodes:05d}_seed{episode_seed}.mcap"
            log = str((self.options.record / name).resolve())
        self.episodes += 1
        self._t0 = self._t = self._session.reset(episode_seed, self._starts(episode_seed), log)
        self.agents = list(self.possible_agents)
        infos = self._session.infos  # the game's own description of each vehicle
        self._drivers = {a.name: WaypointDriver(a.waypoints, a.speed_mps, infos[a.name].wheelbase_m,
                                                infos[a.name].max_steer_rad)
                         for a in self._scripted}
        self._was_decided = {a: False for a in self.agents}
        self._returns = {a: 0.0 for a in self.agents}
        self._distance = {a: self._distance_to_target(a) for a in self.agents}
        return ({a: self._observe(a) for a in self.agents},
                {a: {"episode_seed": episode_seed, **self._criteria(a)} for a in self.agents})

    def _starts(self, episode_seed: int) -> dict[str, Pose2D]:
        """Each learner-driven agent's start, drawn from the episode's seed within start_spread."""
        if not any(self.options.start_spread):
            return {}
        draw = np.random.default_rng(episode_seed)
        dx, dy, dyaw = self.options.start_spread
        out = {}
        for agent in self.possible_agents:
            pose = self.scenario.agent(agent).pose
            out[agent] = Pose2D(pose.x + draw.uniform(-dx, dx), pose.y + draw.uniform(-dy, dy),
                                pose.yaw_deg + draw.uniform(-dyaw, dyaw))
        return out

    def step(self, actions: Mapping[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        """The stages in turn: the actions scaled (all checked before any is sent), every vehicle's
        command sent (the scripted agents' too), the world stepped and judged, each agent's outcome
        rewarded, observed and recorded."""
        if not self.agents:
            raise RuntimeError("step() after every agent's episode ended: call reset()")
        commands = {a: self._scaled(a, actions.get(a)) for a in self.agents}
        try:
            self._send(commands)
            self._t = self._advance()
        except SessionFailed as exc:
            return self._died(str(exc))
        observations, rewards, terminations, truncations, infos = {}, {}, {}, {}, {}
        for agent in self.agents:
            outcome, decided = self._outcome(agent)
            rewards[agent] = reward(outcome, self.options.reward_weights)
            self._returns[agent] += rewards[agent]
            observations[agent] = self._observe(agent)
            terminations[agent] = decided
            scenario_t = self._t - self._t0
            truncations[agent] = not decided and scenario_t >= self.scenario.duration_s - 1e-9
            infos[agent] = {**self._criteria(agent), "reward_terms": outcome.terms(),
                            "return": self._returns[agent], "scenario_time_s": scenario_t}
            if self.options.record is not None:
                self._tell(agent, rewards[agent])
        self.agents = [a for a in self.agents if not (terminations[a] or truncations[a])]
        return observations, rewards, terminations, truncations, infos

    def _send(self, commands: Mapping[str, tuple[float, float]]) -> None:
        """Each acting agent's (speed, steering); an agent whose episode ended stands; the scripted
        agents follow their waypoints."""
        session = self._session
        assert session is not None
        dt = self.options.steps_per_action / PHYSICS_HZ
        for agent, (speed, steer) in commands.items():
            session.command(agent, speed, steer, dt)
        for agent in self.possible_agents:
            if agent not in commands:
                session.command(agent, 0.0, 0.0, dt)
        for name, (steer, speed) in scripted_commands(self._drivers, session.states).items():
            session.command(name, speed, steer, dt)

    def _advance(self) -> float:
        """steps_per_action physics steps, judged: the world time reached."""
        assert self._session is not None
        return self._session.step(self.options.steps_per_action)

    def _outcome(self, agent: str) -> tuple[StepOutcome, bool]:
        """What the step did for the agent as its reward counts it (from the judge's reading of the
        step), and whether its task is decided (every criterion passed, or one failed)."""
        session = self._session
        assert session is not None
        mine = [c for c in session.judge.criteria if c.agent == agent]
        failed = any(c.verdict.passed is False for c in mine)
        decided = failed or all(c.decided for c in mine)
        newly = decided and not self._was_decided[agent]
        self._was_decided[agent] = decided
        distance = self._distance_to_target(agent)
        dt = self.options.steps_per_action / PHYSICS_HZ
        outcome = StepOutcome(approach_m=self._distance[agent] - distance,
                              forward_m=float(session.states[agent]["speed_mps"]) * dt,
                              contacts=session.contacts[agent], crop_m2=session.crushed[agent],
                              passed=newly and not failed, failed=newly and failed)
        self._distance[agent] = distance
        return outcome, decided

    def _tell(self, agent: str, reward_: float) -> None:
        """The agent's TaskStatus of this step into the episode log (a recording environment)."""
        assert self._session is not None
        try:
            self._session.task(self._session.judge.task_status(agent, reward_, self._returns[agent]))
        except SessionFailed:
            pass  # the next step says so

    def _died(self, why: str) -> tuple[dict, dict, dict, dict, dict]:
        """The world went away: every agent's episode is truncated; the next reset starts a new one."""
        agents, self.agents = self.agents, []
        spaces_ = self._observation_spaces
        observations = {a: {k: np.zeros(s.shape, s.dtype) for k, s in spaces_[a].spaces.items()}
                        for a in agents}
        self.close()
        return (observations, {a: 0.0 for a in agents}, {a: False for a in agents}, {a: True for a in agents},
                {a: {"session_error": why} for a in agents})

    def _scaled(self, agent: str, action: Any) -> tuple[float, float]:
        """(speed m/s, road-wheel angle rad) of an action; ValueError for one outside the space."""
        if action is None:
            raise ValueError(f"no action for {agent} (the agents acting: {', '.join(self.agents)})")
        a = np.asarray(action, dtype=np.float64)
        if a.shape != (2,):
            raise ValueError(f"{agent}: an action is (speed, steering), shape (2,), got shape {a.shape}")
        if not np.isfinite(a).all() or (np.abs(a) > 1.0).any():
            raise ValueError(f"{agent}: an action is two finite numbers in [-1, 1], got {a.tolist()}")
        assert self._session is not None
        p = self._session.infos[agent]  # the limits as the game gives them
        speed = a[0] * (p.max_speed_mps if a[0] >= 0.0 else p.max_reverse_mps)
        return float(speed), float(a[1] * p.max_steer_rad)

    def _distance_to_target(self, agent: str) -> float:
        assert self._session is not None
        p = self._session.states[agent]["pose"]["position"]
        tx, ty = self._targets[agent]
        return math.hypot(tx - p["x"], ty - p["y"])

    def _observe(self, agent: str) -> dict[str, np.ndarray]:
        session = self._session
        assert session is not None
        sensors = session.sensors.get(agent)
        view = AgentView(agent, session.states[agent], self._targets[agent],
                         sensors.lidar if sensors is not None else None,
                         sensors.camera if sensors is not None else None)
        space = self._observation_spaces[agent]
        return {kind.name: kind.array(space[kind.name], view) for kind in self._kinds}

    def _criteria(self, agent: str) -> dict[str, Any]:
        assert self._session is not None
        return {"criteria": {c.name: {"passed": c.verdict.passed, "value": c.verdict.value,
                                      "limit": c.verdict.limit, "unit": c.unit, "detail": c.verdict.detail}
                             for c in self._session.judge.criteria if c.agent == agent}}

    # -- the rest of the API ----------------------------------------------------------------------

    def render(self) -> np.ndarray | None:
        """rgb_array: a top view around the first agent (0.25 m a pixel): objects orange, agents
        white, north up."""
        if self.render_mode != "rgb_array" or self._session is None:
            return None
        image = np.zeros((RENDER_PIXELS, RENDER_PIXELS, 3), np.uint8)
        image[:] = (40, 90, 40)
        states = self._session.states
        centre = states[self.possible_agents[0]]["pose"]["position"]
        rows, cols = np.mgrid[0:RENDER_PIXELS, 0:RENDER_PIXELS]
        east = centre["x"] + (cols - RENDER_PIXELS / 2) * RENDER_M_PER_PIXEL
        north = centre["y"] + (RENDER_PIXELS / 2 - rows) * RENDER_M_PER_PIXEL
        objects = self._session.latched_objects()
        for o in objects:
            p = o["pose"]["position"]
            image[np.hypot(east - p["x"], north - p["y"]) <= 0.5 * o["size_m"]["x"]] = (255, 150, 0)
        for name, state in states.items():
            p = state["pose"]["position"]
            image[np.hypot(east - p["x"], north - p["y"]) <= 1.0] = (255, 255, 255)
        return image

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 -- interpreter shutdown
            pass


class AcresEnv(Env):
    """One agent of a scenario as a Gymnasium Env; the others a learner would drive stand still."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 10}

    def __init__(self, scenario: str | Path, agent: str | None = None, render_mode: str | None = None,
                 **options: Any):
        self.parallel = AcresParallelEnv(scenario, render_mode=render_mode, **options)
        agents = self.parallel.possible_agents
        if agent is None:
            if len(agents) != 1:
                raise ValueError(f"the scenario has {len(agents)} agents a learner drives "
                                 f"({', '.join(agents)}): name one (agent=...)")
            agent = agents[0]
        if agent not in agents:
            raise ValueError(f"no agent {agent!r} a learner drives; the agents: {', '.join(agents)}")
        self.agent = agent
        self.render_mode = render_mode
        # a frame per step: its rate is the world's steps per second
        self.metadata = {**self.metadata, "render_fps": PHYSICS_HZ / self.parallel.options.steps_per_action}
        self.observation_space = self.parallel.observation_space(agent)
        self.action_space = self.parallel.action_space(agent)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        super().reset(seed=seed)
        observations, infos = self.parallel.reset(seed=seed, options=options)
        return observations[self.agent], infos[self.agent]

    def step(self, action: Any) -> tuple[dict, float, bool, bool, dict]:
        actions = {a: np.zeros(2, np.float32) for a in self.parallel.agents}
        actions[self.agent] = action
        observations, rewards, terminations, truncations, infos = self.parallel.step(actions)
        a = self.agent
        if a not in observations:  # cannot be: the agent acts until its episode ends
            raise RuntimeError("step() after the episode ended: call reset()")
        return observations[a], rewards[a], terminations[a], truncations[a], infos[a]

    def render(self) -> np.ndarray | None:
        return self.parallel.render()

    def close(self) -> None:
        self.parallel.close()
