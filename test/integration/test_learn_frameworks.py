"""The environments under learning frameworks no one here wrote (the learners' extras; skipped, saying
so, where they are not installed): stable-baselines3's checker and a short PPO run that changes its
policy; RLlib's PPO training iterations with its two env runners on two Ray nodes (both on
127.0.0.1), each runner's environment a session of its own on its node."""

from __future__ import annotations


import numpy as np
import pytest

pytestmark = pytest.mark.ros_free  # no ROS graph nor message: CI runs it on one distribution

gymnasium = pytest.importorskip("gymnasium", reason="gymnasium is not installed")

import acres_sim.learn  # noqa: E402,F401 -- registers acres_sim/Scenario-v0

from support.learn_scenarios import GATE, TWO  # noqa: E402


def test_stable_baselines3_checks_the_env_and_its_ppo_learns_from_it():
    pytest.importorskip("stable_baselines3",
                        reason="stable-baselines3 is not installed (the learners' extras)")
    pytest.importorskip("torch", reason="torch is not installed (the learners' extras)")
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_checker import check_env

    env = gymnasium.make("acres_sim/Scenario-v0", scenario=str(GATE), observations=["state", "lidar"],
                         start_spread=(1.0, 1.0, 20.0))
    try:
        check_env(env.unwrapped, warn=True)
        model = PPO("MultiInputPolicy", env, n_steps=64, batch_size=32, n_epochs=2, seed=3, device="cpu")
        before = [p.detach().clone() for p in model.policy.parameters()]
        model.learn(total_timesteps=128)
        assert model.num_timesteps >= 128
        changed = sum(not np.array_equal(a.numpy(), b.detach().numpy())
                      for a, b in zip(before, model.policy.parameters()))
        assert changed > 0  # the updates reached the policy
        obs, _ = env.reset(seed=5)
        action, _ = model.predict(obs, deterministic=True)
        assert env.action_space.contains(action.astype(np.float32))
    finally:
        env.close()


def test_gymnasiums_vector_env_and_pettingzoos_wrappers_work_over_the_sessions(tmp_path):
    from pettingzoo.test import api_test
    from pettingzoo.utils.conversions import parallel_to_aec

    from acres_sim.learn import AcresParallelEnv

    make = [lambda: gymnasium.make("acres_sim/Scenario-v0", scenario=str(GATE), observations=["state"])] * 2
    vector = gymnasium.vector.AsyncVectorEnv(make)  # each environment in a process, each its own game
    single = make[0]()
    try:
        obs, _ = vector.reset(seed=[1, 2])
        alone, _ = single.reset(seed=2)
        assert obs["state"].shape == (2, 15) and np.array_equal(obs["state"][1], alone["state"])
        actions = np.array([[0.3, 0.1], [0.5, -0.2]], np.float32)
        for _ in range(5):
            obs, rewards, _, _, _ = vector.step(actions)
            alone, reward, *_ = single.step(actions[1])
        assert np.array_equal(obs["state"][1], alone["state"]) and rewards[1] == reward  # bit for bit
        assert not np.array_equal(obs["state"][0], obs["state"][1])
    finally:
        vector.close()
        single.close()
    path = tmp_path / "two.yaml"
    path.write_text(TWO)
    aec = parallel_to_aec(AcresParallelEnv(path, observations=["state"]))
    try:
        api_test(aec, num_cycles=8)
    finally:
        aec.close()


def test_the_start_is_drawn_from_the_seed_within_the_spread():
    env = gymnasium.make("acres_sim/Scenario-v0", scenario=str(GATE), observations=["state"],
                         start_spread=(1.0, 1.0, 20.0))
    try:
        starts = [env.reset(seed=seed)[0]["state"] for seed in (1, 2, 1)]
    finally:
        env.close()
    assert np.array_equal(starts[0], starts[2])  # the same seed, the same start
    assert not np.array_equal(starts[0], starts[1])
    for state in starts:  # the gate 25 m ahead of the scenario's start, from within the spread
        assert abs(state[5] - 25.0) < 1.5 and abs(np.degrees(state[6])) < 20.0 + 4.0


def test_rllib_trains_with_env_runners_on_two_ray_nodes(tmp_path, two_ray_nodes):
    pytest.importorskip("ray.rllib", reason="RLlib is not installed (the learners' extras)")
    pytest.importorskip("torch", reason="torch is not installed (the learners' extras)")
    import ray
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.connectors.env_to_module import FlattenObservations

    from acres_sim.learn.rllib_env import AcresMultiAgentEnv, register

    scenario = tmp_path / "two.yaml"
    scenario.write_text(TWO)
    local = AcresMultiAgentEnv({"scenario": str(scenario), "observations": ["state"]})
    assert local.possible_agents == ["polaris", "maxxum"]
    local.close()
    ray.init(address=two_ray_nodes.address)
    algo = None
    try:
        config = (
            PPOConfig()
            .environment(register(), env_config={"scenario": str(scenario), "observations": ["state"]})
            .framework("torch")
            .env_runners(num_env_runners=2, num_cpus_per_env_runner=1, rollout_fragment_length=40,
                         env_to_module_connector=lambda env, spaces, device: FlattenObservations(
                             multi_agent=True))
            .multi_agent(policies={"shared"}, policy_mapping_fn=lambda agent_id, episode, **kw: "shared")
            .training(train_batch_size_per_learner=160, minibatch_size=80, num_epochs=1)
        )
        algo = config.build_algo()
        results = [algo.train() for _ in range(2)]
        sampled = results[-1]["env_runners"]["num_env_steps_sampled_lifetime"]
        assert sampled >= 320
        assert np.isfinite(results[-1]["env_runners"]["episode_return_mean"])
        places = algo.env_runner_group.foreach_env_runner(
            lambda runner: (ray.get_runtime_context().get_node_id(),
                            runner.env.envs[0].unwrapped.env._session.game.child.proc.pid),
            local_env_runner=False)
        nodes = {n["NodeID"] for n in ray.nodes() if n["Alive"]}
        assert {node for node, _ in places} == nodes  # one env runner on each node
        assert len({pid for _, pid in places}) == 2  # each its own game
    finally:
        if algo is not None:
            algo.stop()
        ray.shutdown()
