"""Command line of the fake game: python3 -m acres_sim.fake_game [options].

    python3 -m acres_sim.fake_game --port 5601 --vehicle polaris
    python3 -m acres_sim.fake_game --ports 5601,5602 --vehicles polaris,maxxum [--agents a,b]
    python3 -m acres_sim.fake_game --port 5601 --vehicle-ports 5611   (driven through its Vehicle Bridge)

Port 0 (for a stream or the control channel) takes a free port from the kernel; the LISTENING
lines name the port that was taken. SIGINT and SIGTERM end the run cleanly (STOP lines, exit 0).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

from acres_sim.episode.log_file import EpisodeLogError
from acres_sim.fake_game.app import FakeGame
from acres_sim.fake_game.simulation.lidar_model import report_compiles_to
from acres_sim.heap import PeriodicTrim
from acres_sim.fake_game.simulation.session_config import (
    FLAVORS,
    VEHICLE_NAMES,
    SessionConfig,
    agent_specs,
)
from acres_sim.stream.protocol import DEFAULT_STREAM_PORT
from acres_sim.stop_signals import restore, stop_on_signals


def _int_list(text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a comma list of integers, got {text!r}") from None


def _name_list(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def _port(text: str) -> int:
    value = int(text)
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"port must be 0-65535, got {value}")
    return value


def _non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python3 -m acres_sim.fake_game",
        description="Serve ACRES sensor streams (TSS1) from a synthetic world, one port per agent.")
    p.add_argument("--port", type=_port, default=DEFAULT_STREAM_PORT,
                   help=f"stream port of a single agent ({DEFAULT_STREAM_PORT})")
    p.add_argument("--vehicle", default="polaris", choices=VEHICLE_NAMES, help="vehicle of a single agent")
    p.add_argument("--ports", type=_int_list, help="one stream port per agent, e.g. 5601,5602")
    p.add_argument("--vehicles", type=_name_list, help="one vehicle per port, e.g. polaris,maxxum")
    p.add_argument("--agents", type=_name_list, help="agent names (default: the vehicle names)")
    p.add_argument("--vehicle-ports", type=_int_list,
                   help="one Vehicle Bridge port per agent, e.g. 5611,5612 (0 = a free port; default: none, "
                        "the vehicles drive their routes)")
    p.add_argument("--seed", type=int, default=SessionConfig.seed,
                   help=f"seed of every random process ({SessionConfig.seed})")
    p.add_argument("--realtime-factor", type=float, default=SessionConfig.realtime_factor,
                   help="simulated seconds per wall-clock second; 0 = as fast as possible (%(default)s)")
    p.add_argument("--lockstep", action="store_true",
                   help="start held; the world advances only on step requests of the control channel")
    p.add_argument("--control-port", type=_port, default=None,
                   help="JSON-lines control channel on 127.0.0.1 (0 = a free port; default: none)")
    p.add_argument("--flavor", choices=FLAVORS, default=SessionConfig.flavor,
                   help="game, or core: the ACRES Core behaviour (Hello sequence 0 at world time, no camera)")
    p.add_argument("--no-georeference", action="store_true", help="a map without geographic reference")
    p.add_argument("--no-noise", action="store_true", help="exact sensors (no INS, LiDAR or camera noise)")
    p.add_argument("--max-queued-bytes", type=int, default=SessionConfig.max_queued_bytes,
                   help="queue size above which LiDAR and camera frames are dropped (96 MiB); "
                        "every frame above twice this")
    p.add_argument("--stats-period-s", type=float, default=SessionConfig.stats_period_s,
                   help="period of the STATS lines while a client is connected (%(default)s)")
    p.add_argument("--duration-s", type=float, default=SessionConfig.duration_s,
                   help="end the run when the world time reaches this (0 = run until stopped)")
    p.add_argument("--cached", action="store_true",
                   help="render a few clouds and images once and re-serve them with fresh stamps")
    p.add_argument("--flat-ground", action="store_true",
                   help="the plane z = 0 instead of the rolling ground (cheaper; no roll or pitch)")
    p.add_argument("--episode-log", default="", metavar="FILE.mcap",
                   help="record the episode log (MCAP) from the first physics step into this new file")
    p.add_argument("--episode-replay", default="", metavar="FILE.mcap",
                   help="replay an episode log: the agents follow their logged states")
    p.add_argument("--stepping-token", default="", metavar="TOKEN",
                   help="only control requests carrying this token step, reset, pause or play the world "
                        "(what a scenario run starts the game with)")
    p.add_argument("--sensors", type=_name_list, default=list(SessionConfig.sensors), metavar="LIST",
                   help="the sensors the vehicles carry, a comma list of lidar, camera, ins (all of them; "
                        "\"\": none): the others are off in the Hello and never rendered")
    p.add_argument("--render-workers", type=_non_negative_int, default=SessionConfig.render_workers,
                   help="threads that render clouds and images (0 = one per agent in real time, two per "
                        "agent in lockstep or faster than real time, at most one per core)")
    return p


def config_from_args(args: argparse.Namespace) -> SessionConfig:
    ports = args.ports if args.ports else [args.port]
    vehicles = args.vehicles if args.vehicles else [args.vehicle]
    if args.lockstep and args.control_port is None:
        raise ValueError("--lockstep needs --control-port (the world only moves on step requests)")
    return SessionConfig(
        agents=agent_specs(ports, vehicles, args.agents, args.vehicle_ports),
        seed=args.seed,
        realtime_factor=args.realtime_factor,
        lockstep=args.lockstep,
        flavor=args.flavor,
        georeferenced=not args.no_georeference,
        noise=not args.no_noise,
        cached=args.cached,
        flat_ground=args.flat_ground,
        max_queued_bytes=args.max_queued_bytes,
        stats_period_s=args.stats_period_s,
        duration_s=args.duration_s,
        render_workers=args.render_workers,
        episode_log=args.episode_log,
        episode_replay=args.episode_replay,
        stepping_token=args.stepping_token,
        sensors=tuple(args.sensors),
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        config = config_from_args(args)
    except ValueError as exc:
        parser.error(str(exc))
    stop, previous = stop_on_signals()  # a flag (acres_sim.stop_signals: a lock in a handler hangs)
    report_compiles_to(lambda line: print(f"fake_game: {line}", file=sys.stderr))
    try:
        try:
            game = FakeGame.start(config, args.control_port)
        except (EpisodeLogError, ValueError) as exc:  # --episode-log / --episode-replay
            print(f"fake_game: exiting: {exc}", file=sys.stderr)
            return 1
        if not game.session.agents:
            game.stop()
            ports = ", ".join(str(a.port) for a in config.agents)
            print(f"fake_game: exiting: no stream could listen on 127.0.0.1 port {ports} (in use by another "
                  "program?); free the port or choose another with --port/--ports", file=sys.stderr)
            return 1
        trim = PeriodicTrim()
        while not stop.is_set() and not game.session.finished:
            time.sleep(0.2)
            trim()
        game.stop()
    finally:
        restore(previous)
    return 0
