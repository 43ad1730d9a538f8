"""The scenario as RLlib's multi-agent environment (needs Ray with RLlib, the learners' extras).

    from acres_sim.learn.rllib_env import AcresMultiAgentEnv, register
    register()  # the name "acres_sim_scenario" for config.environment(...)
    config.environment("acres_sim_scenario", env_config={"scenario": PATH, "observations": ["state"]})

env_config holds `scenario` and AcresParallelEnv's options. Every env runner makes its own
environments, and each of those starts its own session (a fake game, ports of its choosing) on the
node Ray placed the runner on; nothing is shared between runners or nodes. Dict observations: give
RLlib's FlattenObservations connector (config.env_runners(env_to_module_connector=...)) to the
default models.
"""

from __future__ import annotations

from typing import Any

from gymnasium import spaces

try:
    from ray.rllib.env.multi_agent_env import MultiAgentEnv
except ImportError as exc:  # the learners' extras are optional
    raise ImportError("acres_sim.learn.rllib_env needs RLlib: pip install -r tools/requirements-learn.txt "
                      "(or ACRES_LEARN=1 bash tools/bootstrap.sh)") from exc

from acres_sim.learn.env import AcresParallelEnv

NAME = "acres_sim_scenario"


class AcresMultiAgentEnv(MultiAgentEnv):
    def __init__(self, config: dict[str, Any] | None = None):
        super().__init__()
        options = dict(config or {})
        if "scenario" not in options:
            raise ValueError("env_config needs 'scenario': the scenario file's path")
        self.env = AcresParallelEnv(options.pop("scenario"), **options)
        self.possible_agents = list(self.env.possible_agents)
        self.agents = list(self.possible_agents)
        self.observation_spaces = {a: self.env.observation_space(a) for a in self.possible_agents}
        self.action_spaces = {a: self.env.action_space(a) for a in self.possible_agents}
        self.observation_space = spaces.Dict(self.observation_spaces)
        self.action_space = spaces.Dict(self.action_spaces)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        observations, infos = self.env.reset(seed=seed, options=options)
        self.agents = list(self.env.agents)
        return observations, infos

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        observations, rewards, terminated, truncated, infos = self.env.step(actions)
        self.agents = list(self.env.agents)
        ended = not self.agents
        terminated["__all__"] = ended and all(terminated.values())
        truncated["__all__"] = ended and not terminated["__all__"]
        return observations, rewards, terminated, truncated, infos

    def render(self) -> Any:
        return self.env.render()

    def close(self) -> None:
        self.env.close()


def register(name: str = NAME) -> str:
    """RLlib's (Tune's) registry knows the environment by `name` in this process and its workers."""
    from ray.tune.registry import register_env

    register_env(name, lambda config: AcresMultiAgentEnv(dict(config)))
    return name
