"""Learners' environments over scenario files: AcresParallelEnv (PettingZoo) and AcresEnv (Gymnasium,
registered as "acres_sim/Scenario-v0" when this package is imported). Needs gymnasium; the parallel
environment is a pettingzoo.ParallelEnv where pettingzoo is installed."""

from gymnasium.envs.registration import register, registry

from acres_sim.learn.env import AcresEnv, AcresParallelEnv
from acres_sim.scenario.processes import GamePorts

ENV_ID = "acres_sim/Scenario-v0"
if ENV_ID not in registry:
    register(id=ENV_ID, entry_point="acres_sim.learn.env:AcresEnv")

__all__ = ["ENV_ID", "AcresEnv", "AcresParallelEnv", "GamePorts"]
