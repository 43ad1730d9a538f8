"""stable-baselines3's PPO learns a shipped task: its learning curve beside a random and a constant-action
policy (`make learn-curve`; needs the learners' extras).

The task: scenarios/reach_the_gate.yaml, the Polaris' start drawn from each episode's seed within
START_SPREAD (so that no constant action reaches the gate), state observations, the default dense
reward (metres gained on the gate, +10 once it is reached (the episode ends there), -10 when a criterion
fails). PPO's observations and rewards are normalised by VecNormalize (its running statistics are
used in evaluation too). GOAL_RETURN was fixed before any training: the mean return of EVAL_EPISODES
evaluation episodes (deterministic policy, seeds EVAL_SEEDS, the same for every policy) must reach
it within the budget (--timesteps, default BUDGET_STEPS on two cores). Prints each evaluation, writes
the PNG and a JSON of the figures, exits 1 when the goal is not reached.

    python -m benchmark.learn_curve [--timesteps N] [--out build/learn_curve.png]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
SCENARIO = REPO / "scenarios" / "reach_the_gate.yaml"
START_SPREAD = (1.5, 1.5, 35.0)  # x m, y m, yaw deg around the scenario's start
GOAL_RETURN = 25.0  # fixed before training: most of the 25 m gained and the gate reached, no penalty
BUDGET_STEPS = 80_000
EVAL_EPISODES = 6
EVAL_SEEDS = [10_000 + k for k in range(EVAL_EPISODES)]
CONSTANT_ACTION = (0.5, 0.0)  # half the top speed (5.5 m/s), straight on


def make_env(**extra):
    import gymnasium

    import acres_sim.learn  # noqa: F401 -- registers the id

    return gymnasium.make("acres_sim/Scenario-v0", scenario=str(SCENARIO), observations=["state"],
                          start_spread=START_SPREAD, **extra)


def evaluate(env, act, seeds: list[int]) -> float:
    """The mean return of one episode per seed, `act(observation) -> action`."""
    returns = []
    for seed in seeds:
        obs, _ = env.reset(seed=seed)
        total, done = 0.0, False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(act(obs))
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
    return float(np.mean(returns))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--timesteps", type=int, default=BUDGET_STEPS)
    p.add_argument("--eval-every", type=int, default=8_000, help="environment steps between evaluations")
    p.add_argument("--envs", type=int, default=2, help="environments stepped in parallel (processes)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=str(REPO / "build" / "learn_curve.png"))
    p.add_argument("--verbose", type=int, default=0, help="stable-baselines3's own progress table (1)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import SubprocVecEnv, VecNormalize

    started = time.monotonic()
    evaluation = make_env()
    rng = np.random.default_rng(args.seed)
    baselines = {
        "random": evaluate(evaluation, lambda obs: rng.uniform(-1.0, 1.0, 2).astype(np.float32), EVAL_SEEDS),
        "constant": evaluate(evaluation, lambda obs: np.asarray(CONSTANT_ACTION, np.float32), EVAL_SEEDS),
    }
    print(f"learn_curve: baselines over {EVAL_EPISODES} episodes: random {baselines['random']:.2f}, constant "
          f"{CONSTANT_ACTION} {baselines['constant']:.2f}; goal {GOAL_RETURN:g}", flush=True)
    curve: list[tuple[int, float, float]] = []  # (steps, mean return, wall s)

    class Evaluate(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.next_at = 0

        def _on_step(self) -> bool:
            if self.num_timesteps >= self.next_at:
                self.next_at += args.eval_every
                value = evaluate(evaluation, policy, EVAL_SEEDS)
                curve.append((self.num_timesteps, value, time.monotonic() - started))
                print(f"learn_curve: {self.num_timesteps:>7} steps: mean return {value:7.2f} "
                      f"({time.monotonic() - started:.0f} s)", flush=True)
            return True

    vec = VecNormalize(make_vec_env(make_env, n_envs=args.envs, seed=args.seed,
                                    vec_env_cls=SubprocVecEnv if args.envs > 1 else None), gamma=0.98)

    def policy(obs):
        return model.predict(vec.normalize_obs(obs), deterministic=True)[0]

    model = PPO("MultiInputPolicy", vec, n_steps=256, batch_size=64, n_epochs=10, gamma=0.98,
                learning_rate=3e-4, seed=args.seed, device="cpu", verbose=args.verbose,
                # actions start with a spread of 0.37, not 1: fewer clipped, fewer wild steering swings
                policy_kwargs={"log_std_init": -1.0})
    model.learn(total_timesteps=args.timesteps, callback=Evaluate())
    final = evaluate(evaluation, policy, EVAL_SEEDS)
    curve.append((int(model.num_timesteps), final, time.monotonic() - started))
    vec.close()
    evaluation.close()
    wall = time.monotonic() - started
    reached = final >= GOAL_RETURN
    print(f"learn_curve: after {model.num_timesteps} steps ({wall:.0f} s): mean return {final:.2f} against "
          f"the goal {GOAL_RETURN:g} ({'reached' if reached else 'NOT reached'}); "
          f"random {baselines['random']:.2f}, "
          f"constant {baselines['constant']:.2f}", flush=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    _plot(out, curve, baselines)
    out.with_suffix(".json").write_text(json.dumps({
        "scenario": str(SCENARIO.relative_to(REPO)), "start_spread": START_SPREAD, "goal_return": GOAL_RETURN,
        "timesteps": int(model.num_timesteps), "wall_s": wall, "envs": args.envs, "final_return": final,
        "baselines": baselines, "curve": curve}, indent=2) + "\n")
    print(f"learn_curve: {out} and {out.with_suffix('.json')}")
    return 0 if reached else 1


def _plot(path: Path, curve: list[tuple[int, float, float]], baselines: dict[str, float]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    steps = [c[0] for c in curve]
    ax.plot(steps, [c[1] for c in curve], "o-", color="tab:blue", label="PPO (deterministic)")
    ax.axhline(baselines["random"], color="tab:red", ls="--", label=f"random ({baselines['random']:.1f})")
    ax.axhline(baselines["constant"], color="tab:orange", ls=":",
               label=f"constant {CONSTANT_ACTION} ({baselines['constant']:.1f})")
    ax.axhline(GOAL_RETURN, color="black", lw=0.8, label=f"goal ({GOAL_RETURN:g}, fixed before training)")
    ax.set_xlabel("environment steps (10 per second of world time)")
    ax.set_ylabel(f"mean return, {EVAL_EPISODES} episodes")
    ax.set_title("reach_the_gate, starts drawn within ±1.5 m, ±35°: stable-baselines3 PPO")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
