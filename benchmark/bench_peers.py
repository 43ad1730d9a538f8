"""A peer simulator's environment beside ours: MetaDrive's env steps/s (`metadrive-simulator`, where
installed: an optional extra, `pip install metadrive-simulator==0.4.3`), headless, its default
observation (the ego's state and a 240-beam LiDAR), light traffic, 0.1 s of simulated time per step
(5 physics steps of 0.02 s), random actions, in a process of its own.

MetaDrive fetches its rendering assets at its first start; a headless run loads none of them, so the
fetch is skipped here (no network, nothing written into its package).

    python3 -m benchmark.bench_peers [--seconds 10]
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import multiprocessing
import time

METADRIVE_VERSION = "0.4.3"


def metadrive_installed() -> bool:
    return importlib.util.find_spec("metadrive") is not None


def _metadrive_rate(seconds: float) -> float:
    from metadrive.engine.base_engine import BaseEngine

    BaseEngine.try_pull_asset = staticmethod(lambda: None)  # headless: no asset is loaded
    from metadrive.envs import MetaDriveEnv

    env = MetaDriveEnv({"use_render": False, "traffic_density": 0.1, "num_scenarios": 1, "start_seed": 0,
                        "log_level": logging.ERROR})
    try:
        assert env.config["decision_repeat"] * env.config["physics_world_step_size"] == 0.1
        env.reset(seed=0)
        for _ in range(20):  # warm-up
            env.step(env.action_space.sample())
        steps, started = 0, time.perf_counter()
        while time.perf_counter() - started < seconds:
            _o, _r, terminated, truncated, _i = env.step(env.action_space.sample())
            steps += 1
            if terminated or truncated:
                env.reset()
        return steps / (time.perf_counter() - started)
    finally:
        env.close()


def metadrive_rate(seconds: float = 10.0) -> float | None:
    """MetaDrive's env steps/s, or None where it is not installed."""
    if not metadrive_installed():
        return None
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(_metadrive_rate, (seconds,))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=10.0)
    rate = metadrive_rate(p.parse_args().seconds)
    print("MetaDrive is not installed (pip install metadrive-simulator==0.4.3)" if rate is None
          else f"MetaDrive {METADRIVE_VERSION}: {rate:.1f} env steps/s")


if __name__ == "__main__":
    main()
