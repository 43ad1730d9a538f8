#!/usr/bin/env python3
"""What the learners' environment costs over its world, and how fast one resets.

- Environment steps/s with state observations (AcresParallelEnv.step: command, 12 physics steps,
  the judge, observations, rewards), one agent (drive_to_the_gate) and two (two agents with a task
  each), against the floor: the same fake game driven by the channels alone, doing only what a step
  must (every agent's command held, 12 physics steps, every vehicle's barrier, every agent's state by
  get_state; the commands the environment sent, sent again), five rounds in turns in one run: the
  median of the rounds' time ratios, each's best rate, and the CPU per step of the game and of the
  learner's process. With LiDAR observations (full renders): steps/s. Beside them, where installed,
  MetaDrive's env steps/s (benchmark.bench_peers).
- reset(): wall time of each reset of a running environment (the game's reset, the scenario's world
  put together, one command period standing), p50 and p95.
- Aggregate environment steps/s of 1 and 2 environments stepped at once (each its own game and
  process).

Figures only, no pass/fail: machines differ.

    python3 -m benchmark.bench_learn [--steps 200] [--resets 20]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from acres_sim.channels.vehicle import VehicleCommand
from acres_sim.game.control_client import ControlClient
from acres_sim.game.vehicle_client import VehicleClient
from acres_sim.learn import AcresEnv, AcresParallelEnv
from acres_sim.scenario.processes import start_fake_game
from acres_sim.scenario.scenario_file import load
from acres_sim.scenario.world_setup import prepare_world, wait_for_game
from benchmark.bench_peers import metadrive_rate

GATE = Path(__file__).resolve().parents[1] / "scenarios" / "drive_to_the_gate.yaml"
ONE = """acres_scenario: 1
name: one_agent
seed: 11
duration_s: 20.0
pace: lockstep
agents:
  polaris: {vehicle: polaris, pose: {x: -10.0, y: -28.0}}
criteria:
  - {reach: {agent: polaris, x: 60.0, y: -28.0}}
  - {no_collision: {agent: polaris}}
  - {max_speed_mps: {agent: polaris, limit: 6.0}}
"""
TWO = """acres_scenario: 1
name: two_agents
seed: 11
duration_s: 20.0
pace: lockstep
agents:
  polaris: {vehicle: polaris, pose: {x: -10.0, y: -28.0}}
  maxxum: {vehicle: maxxum, pose: {x: -10.0, y: -20.0}}
criteria:
  - {reach: {agent: polaris, x: 60.0, y: -28.0}}
  - {reach: {agent: maxxum, x: 60.0, y: -20.0}}
  - {no_collision: {agent: maxxum}}
"""  # the targets out of reach within the steps measured: episodes end by truncation (at 200 steps)


def _actions(k: int) -> np.ndarray:
    """Weaving at a walking pace: the gate is not reached within the steps measured."""
    return np.array([0.15, 0.6 * np.sin(k / 10.0)], np.float32)


def _cpu_s(pid: int) -> float:
    """A process's CPU time so far (user + system, all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class _Cpu:
    """CPU ms per step of the game and of this process over a measured stretch."""

    def __init__(self, game_pid: int):
        self.pid = game_pid
        self.game, self.own = _cpu_s(game_pid), time.process_time()

    def per_step(self, steps: int) -> tuple[float, float]:
        return (1e3 * (_cpu_s(self.pid) - self.game) / steps, 1e3 * (time.process_time() - self.own) / steps)


CPU: dict[str, tuple[float, float]] = {}  # the last run's (game, learner) CPU ms per step, by kind
SENT: dict[Path, list[list[tuple[str, VehicleCommand]]]] = {}  # the last env run's commands, step by step


def env_rate(scenario: Path, observations: list[str], steps: int, as_the_floor: bool = False) -> float:
    """as_the_floor: every episode ends by truncation at 200 steps, as the floor resets."""
    env = AcresParallelEnv(scenario, observations=observations)
    try:
        env.reset(seed=0)
        sent: list[list[tuple[str, VehicleCommand]]] = SENT.setdefault(scenario, [])
        sent.clear()
        for agent, client in env._session.vehicles.items():  # what the floor sends again
            def send(command: VehicleCommand, agent: str = agent, original=client.send) -> bool:
                sent[-1].append((agent, command))
                return original(command)
            client.send = send
        cpu = _Cpu(env._session.game.child.proc.pid)
        started, done = time.perf_counter(), 0
        while done < steps:
            sent.append([])
            env.step({a: _actions(done) for a in env.agents})
            done += 1
            if as_the_floor and not env.agents and done % 200:
                raise RuntimeError(f"{scenario.name}: an episode ended at step {done}, not at its end as "
                                   "the floor's")
            if not env.agents:
                env.reset()
        rate = steps / (time.perf_counter() - started)
        CPU["env"] = cpu.per_step(steps)
        return rate
    finally:
        env.close()


def floor_rate(scenario: Path, steps: int) -> float:
    """The same world and the environment's last run's commands through the channels, only what a
    step must do (a reset as the environment's: the world put together, one step standing)."""
    commands = SENT[scenario]
    s = load(scenario)
    agents = [a.name for a in s.agents]
    folder = Path(tempfile.mkdtemp(prefix="acres_bench_floor_"))
    # no sensors: a learner of states reads none (the environment's game carries none either)
    game = start_fake_game(agents, [a.vehicle for a in s.agents], s.seed, folder, dict(os.environ),
                           ["--realtime-factor", "0", "--sensors", ""])
    news = threading.Condition()
    barriers: dict[str, int] = {}
    described: set[str] = set()

    def told(change: object = None) -> None:
        with news:
            news.notify_all()

    clients = {a: VehicleClient(port, on_info=lambda info, a=a: told(described.add(a)),
                                on_report=lambda r: None,
                                on_barrier=lambda step, t, a=a: told(barriers.__setitem__(a, step)),
                                on_answer=told) for a, port in zip(agents, game.ports.vehicle_ports)}
    control = ControlClient(game.ports.control_port)
    try:
        wait_for_game(control, 60.0)
        for client in clients.values():
            client.start()
        with news:
            news.wait_for(lambda: set(agents) <= described, 60.0)

        def step(sending: list[tuple[str, VehicleCommand]]) -> None:
            for agent, command in sending:
                clients[agent].send(command)
            with news:
                news.wait_for(lambda: all(c.all_answered for c in clients.values()), 60.0)
            done = control.step(12)
            with news:
                news.wait_for(lambda: all(barriers.get(a, -1) >= done.step for a in agents), 60.0)
            for agent in agents:
                control.get_state(agent)

        def reset(seed: int) -> None:
            control.reset("all", seed=seed)
            prepare_world(control, s)
            step([(agent, VehicleCommand(brake=1.0)) for agent in agents])

        reset(0)
        cpu = _Cpu(game.child.proc.pid)
        started = time.perf_counter()
        for k in range(steps):
            step(commands[k])
            if k % 200 == 199:  # as the environment's truncation at 20 s
                reset(k)
        rate = steps / (time.perf_counter() - started)
        CPU["floor"] = cpu.per_step(steps)
        return rate
    finally:
        for client in clients.values():
            client.stop()
        control.close()
        game.child.stop()
        shutil.rmtree(folder, ignore_errors=True)


def reset_times(resets: int) -> list[float]:
    env = AcresEnv(GATE, observations=["state", "lidar"])
    try:
        env.reset(seed=0)
        out = []
        for k in range(resets):
            for j in range(5):
                env.step(_actions(j))
            started = time.perf_counter()
            env.reset(seed=k)
            out.append(time.perf_counter() - started)
        return out
    finally:
        env.close()


def _worker(args: tuple[int, int]) -> float:
    steps, _index = args
    return env_rate(GATE, ["state"], steps)


def aggregate(envs: int, steps: int) -> float:
    with multiprocessing.get_context("spawn").Pool(envs) as pool:
        rates = pool.map(_worker, [(steps, k) for k in range(envs)])
    return sum(rates)


def sweep_costs(sweeps: int = 40) -> dict | None:
    """A Polaris sweep's render (1800 x 32 rays, the loop's poses, noise on) by the compiled caster
    and by the arrays, in turns in this process: median ms each and their ratio (None without
    numba)."""
    from acres_sim.fake_game.simulation.lidar_model import compiled_caster
    from acres_sim.fake_game.simulation.simulation import AgentSimulator
    from acres_sim.fake_game.simulation.vehicles import vehicle_hello
    from acres_sim.stream.timing import column_firing_offsets
    sim = AgentSimulator(vehicle_hello("polaris"), seed=42, noise=True)
    model, lidar = sim._lidar, sim.hello.lidar
    if compiled_caster() is None:
        return None
    costs: dict[bool, list[float]] = {True: [], False: []}
    for k in range(sweeps):
        times = 0.1 + 2.3 * k + column_firing_offsets(lidar.columns, lidar.hz)
        for compiled in (True, False):
            rng = np.random.default_rng(k)
            started = time.perf_counter()
            model.render_sweep(sim.scene, times, sim.lidar_pose, rng, compiled=compiled)
            costs[compiled].append(1e3 * (time.perf_counter() - started))
    compiled_ms, arrays_ms = statistics.median(costs[True]), statistics.median(costs[False])
    return {"compiled_ms": compiled_ms, "arrays_ms": arrays_ms,
            "arrays_over_compiled": arrays_ms / compiled_ms}


def measure_learn(steps: int = 200, resets: int = 20) -> dict:
    """make bench's figures (see the module's docstring)."""
    out: dict = {}
    folder = Path(tempfile.mkdtemp(prefix="acres_bench_learn_"))
    for name, text in (("state_1_agent", ONE), ("state_2_agents", TWO)):
        scenario = folder / f"{name}.yaml"
        scenario.write_text(text)
        # in turns, five rounds: the median of the rounds' ratios (the machine's other work moves
        # single rounds by 10-20 %), the best of each's rates
        env = floor = 0.0
        ratios: list[float] = []
        cpu: dict[str, list[tuple[float, float]]] = {"env": [], "floor": []}
        for _ in range(5):
            env_round = env_rate(scenario, ["state"], steps, as_the_floor=True)
            floor_round = floor_rate(scenario, steps)
            env, floor = max(env, env_round), max(floor, floor_round)
            ratios.append(floor_round / env_round)
            for kind in cpu:
                cpu[kind].append(CPU[kind])
        out[name] = {"env_steps_per_s": env, "floor_steps_per_s": floor,
                     "env_over_floor": statistics.median(ratios), "rounds": ratios,
                     "cpu_ms_per_step": {k: {"game": statistics.median(g for g, _ in v),
                                             "learner": statistics.median(o for _, o in v)}
                                         for k, v in cpu.items()}}
    out["lidar_env_steps_per_s"] = max(env_rate(GATE, ["state", "lidar"], steps) for _ in range(2))
    out["lidar_sweep"] = sweep_costs()
    out["metadrive_steps_per_s"] = metadrive_rate()  # None where it is not installed
    shutil.rmtree(folder, ignore_errors=True)
    times = sorted(reset_times(resets))
    out["reset_p50_ms"] = 1000.0 * statistics.median(times)
    out["reset_p95_ms"] = 1000.0 * times[int(0.95 * (len(times) - 1))]
    out["resets"] = len(times)
    out["sessions_steps_per_s"] = {"1": aggregate(1, steps), "2": aggregate(2, steps)}
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--resets", type=int, default=20)
    args = p.parse_args()
    r = measure_learn(args.steps, args.resets)
    for name in ("state_1_agent", "state_2_agents"):
        f = r[name]
        c = f["cpu_ms_per_step"]
        print(f"{name:15s} environment {f['env_steps_per_s']:7.1f} steps/s, the floor "
              f"{f['floor_steps_per_s']:7.1f} steps/s (best rounds): {f['env_over_floor']:.2f} x the floor's "
              f"time (median of the rounds); CPU ms "
              f"per step, game + learner: {c['env']['game']:.2f} + {c['env']['learner']:.2f} against "
              f"{c['floor']['game']:.2f} + {c['floor']['learner']:.2f}")
    print(f"state+lidar     environment {r['lidar_env_steps_per_s']:7.1f} steps/s")
    if r["lidar_sweep"]:
        print("a Polaris sweep: compiled {compiled_ms:.1f} ms, arrays {arrays_ms:.1f} ms "
              "({arrays_over_compiled:.2f} x)".format(**r["lidar_sweep"]))
    peer = r["metadrive_steps_per_s"]
    print("MetaDrive       not installed (pip install metadrive-simulator==0.4.3)" if peer is None else
          f"MetaDrive       {peer:7.1f} steps/s (state + LiDAR): ours state / it "
          f"{r['state_1_agent']['env_steps_per_s'] / peer:.2f}, ours LiDAR / it "
          f"{r['lidar_env_steps_per_s'] / peer:.2f}")
    print(f"reset (state+lidar): p50 {r['reset_p50_ms']:.0f} ms, p95 {r['reset_p95_ms']:.0f} ms over "
          f"{r['resets']} resets")
    one, two = r["sessions_steps_per_s"]["1"], r["sessions_steps_per_s"]["2"]
    print(f"state-only environments at once: 1 -> {one:.1f} steps/s, 2 -> {two:.1f} steps/s "
          f"({two / one:.2f} x)")


if __name__ == "__main__":
    main()
