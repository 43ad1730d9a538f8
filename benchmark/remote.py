"""Subscribers on another machine, simulated: two network namespaces joined by a veth pair.

The robot host runs the paced Polaris stream (benchmark.replay), sim_bridge and two local
subscribers; the remote host runs two subscribers that, like any other machine, share no memory
with the bridge: their processes get a /dev/shm of their own and another /etc/machine-id (from
which Fast DDS tells hosts apart), so they receive over UDPv4 only. One subscriber of each pair is
reliable (rviz2's default), the other best effort (SensorDataQoS). The link is shaped to a rate
(`tc ... tbf`, 1 Gbit/s by default) in both directions. Every address lives in the two namespaces
this creates (198.18.0.0/15, the benchmarking range) and nothing is routed out of them; both are
deleted on exit. Needs root and iproute2; TestHosts raises HostsUnavailable (with the reason)
where namespaces cannot be made.

Each subscriber process records (stamp, CLOCK_MONOTONIC at the callback), which all namespaces
share with the replay server's publish times, so latencies are measured across hosts as on one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from acres_sim.middleware import dds
from benchmark.latency import GROUPS, latencies, summary
from harness.processes import Proc, ros_env
from benchmark.messages import bridge_topics
from harness.workload import polaris_period

ROBOT_ADDRESS, REMOTE_ADDRESS = "198.18.0.1", "198.18.0.2"
REMOTE_PROFILE_NAME = "fastdds_remote_host.xml"
SUBSCRIBERS = ("local reliable", "local best effort", "remote reliable", "remote best effort")
# What a subscriber of each kind is compared with: the share of what the local reliable one got.
REFERENCE = "local reliable"


class HostsUnavailable(RuntimeError):
    """Network namespaces cannot be created here (not root, no iproute2, no veth)."""


class TestHosts:
    """Two namespaces `<tag>_robot` and `<tag>_remote` joined by a shaped veth pair."""

    __test__ = False  # a harness, not a pytest test class

    def __init__(self, tag: str | None = None, rate: str | None = "1gbit"):
        tag = tag or f"acres{os.getpid() % 100000}"
        self.robot, self.remote = f"{tag}_robot", f"{tag}_remote"
        self._links = (f"{tag[:10]}r", f"{tag[:10]}m")  # interface names: at most 15 characters
        self.rate = rate
        self._identity = tempfile.TemporaryDirectory(prefix="acres_remote_host_")
        self._machine_id = Path(self._identity.name) / "machine-id"
        self._machine_id.write_text(uuid.uuid4().hex + "\n")

    def _ip(self, *args: str) -> None:
        run = subprocess.run(["ip", *args], capture_output=True, text=True)
        if run.returncode != 0:
            raise HostsUnavailable(f"`ip {' '.join(args)}` failed: {run.stderr.strip() or run.returncode}")

    def __enter__(self) -> TestHosts:
        if os.geteuid() != 0:
            raise HostsUnavailable("network namespaces need root")
        try:
            self._ip("netns", "add", self.robot)
            self._ip("netns", "add", self.remote)
        except (FileNotFoundError, HostsUnavailable) as exc:
            self.__exit__()
            raise HostsUnavailable(str(exc)) from exc
        try:
            robot_link, remote_link = self._links
            self._ip("link", "add", robot_link, "netns", self.robot, "type", "veth",
                     "peer", "name", remote_link, "netns", self.remote)
            ends = ((self.robot, robot_link, ROBOT_ADDRESS), (self.remote, remote_link, REMOTE_ADDRESS))
            for ns, link, address in ends:
                self._ip("-n", ns, "link", "set", "lo", "up")
                self._ip("-n", ns, "addr", "add", f"{address}/24", "dev", link)
                self._ip("-n", ns, "link", "set", link, "up")
                self._ip("-n", ns, "route", "add", "224.0.0.0/4", "dev", link)  # DDS discovery (multicast)
                if self.rate:
                    # burst: what the rate sends in 2 ms; latency: the queue a burst may wait in
                    run = subprocess.run(["tc", "-n", ns, "qdisc", "add", "dev", link, "root", "tbf", "rate",
                                          self.rate, "burst", "256kb", "latency", "50ms"],
                                         capture_output=True, text=True)
                    if run.returncode != 0:
                        raise HostsUnavailable(f"tc tbf failed: {run.stderr.strip()}")
        except (FileNotFoundError, HostsUnavailable) as exc:
            self.__exit__()
            raise HostsUnavailable(str(exc)) from exc
        return self

    def __exit__(self, *_exc: object) -> None:
        for ns in (self.robot, self.remote):  # deleting a namespace deletes its end of the veth too
            subprocess.run(["ip", "netns", "delete", ns], capture_output=True)
        self._identity.cleanup()

    def command(self, host: str, args: list[str]) -> list[str]:
        """`args` run in the network namespace of `host` (self.robot or self.remote). `ip netns
        exec` gives the process a mount namespace of its own (slave to the host's): the remote
        host's processes mount their own /dev/shm and machine id there, seen by nobody else."""
        if host != self.remote:
            return ["ip", "netns", "exec", host, *args]
        another_machine = 'mount -t tmpfs -o size=256m acres_remote_shm /dev/shm && ' \
                          'mount --bind "$0" /etc/machine-id && exec "$@"'
        return ["ip", "netns", "exec", host, "sh", "-c", another_machine, str(self._machine_id), *args]


def _env(domain: int, **extra: str) -> dict[str, str]:
    """ros_env without the profile variables of the calling shell, with discovery over the subnet
    (the link between the two namespaces; nothing else is on it)."""
    env = ros_env(domain)
    for variable in (dds.FASTDDS_VARIABLE, dds.LEGACY_VARIABLE, dds.OVERRIDE_VARIABLE,
                     "FASTDDS_BUILTIN_TRANSPORTS", "ROS_STATIC_PEERS"):
        env.pop(variable, None)
    env.update(ROS_AUTOMATIC_DISCOVERY_RANGE="SUBNET", **extra)
    return env


def measure_remote(seconds: float, tmp: Path, domain: int = 230, rate: str | None = "1gbit",
                   remote_profile: str | None = None, deep: bool = False) -> dict[str, Any]:
    """Per subscriber (SUBSCRIBERS): per group (INS, LiDAR, camera, clock) latency p50 / p99 /
    max in ms, messages sent and lost, and `share`, its received count over the local reliable
    subscriber's. `remote_profile`: a Fast DDS profile file the remote subscribers load (through
    the variable of this machine's Fast DDS generation), None for their defaults. `deep`: every
    subscriber keeps 1000 messages instead of rviz2's 5 (benchmark.subscriber), so that a subscriber
    process starved of CPU for a moment does not lose what the middleware delivered: the shares
    then measure delivery over the link, not each counting process's speed."""
    period = polaris_period()
    spec = bridge_topics(period.hello, "/polaris")
    sent_out = tmp / "remote_sent.json"
    procs: list[Proc] = []
    with TestHosts(rate=rate) as hosts:
        try:
            replay = Proc(hosts.command(hosts.robot, [sys.executable, "-m", "benchmark.replay",
                                                      str(sent_out)]), _env(domain), "replay")
            procs.append(replay)
            port = int(replay.wait_line(lambda line: line.startswith("PORT "), 60).split()[1])
            outs = {}
            for name in SUBSCRIBERS:
                host = hosts.remote if name.startswith("remote") else hosts.robot
                extra = {}
                if host == hosts.remote and remote_profile:
                    generation = dds.fast_dds_generation() or dds.DEFAULT_GENERATION
                    extra[dds.GENERATIONS[generation][0]] = remote_profile
                outs[name] = tmp / f"remote_{name.replace(' ', '_')}.json"
                mode = ["raw"] + (["best_effort"] if name.endswith("best effort") else [])
                mode += ["deep"] if deep else []
                procs.append(Proc(hosts.command(host, [sys.executable, "-m", "benchmark.subscriber",
                                                       json.dumps(spec), str(outs[name]), *mode]),
                                  _env(domain, **extra), f"subscriber ({name})"))
            bridge = Proc(hosts.command(hosts.robot, [sys.executable, "-m", "acres_sim.nodes.sim_bridge",
                                                      "--ros-args",
                                                      "-r", "__ns:=/polaris", "-p", f"port:={port}",
                                                      "-p", "stats_period_s:=0.0"]),
                          _env(domain), "sim_bridge")
            procs.append(bridge)
            profile_line = bridge.wait_line(lambda line: "DDS profile" in line, 60)
            for proc in procs[1:1 + len(SUBSCRIBERS)]:
                proc.wait_line(lambda line: line.strip() == "READY", 120)
            time.sleep(2.0)
            start = time.monotonic()
            time.sleep(seconds)
            end = time.monotonic()
            time.sleep(1.5)  # the window's last messages
        finally:
            for proc in reversed(procs):  # subscribers write their records, the replay its log
                proc.stop()
    sent = json.loads(sent_out.read_text())
    out: dict[str, Any] = {"profile": profile_line, "rate": rate or "unshaped", "seconds": seconds}
    for name in SUBSCRIBERS:
        out[name] = summary([latencies(sent, json.loads(outs[name].read_text()), start, end)])
    for name in SUBSCRIBERS:
        for group in GROUPS.values():
            got = out[name][group]["messages"] - out[name][group]["lost"]
            reference = out[REFERENCE][group]["messages"] - out[REFERENCE][group]["lost"]
            out[name][group]["share"] = got / reference if reference else float("nan")
    return out


def print_remote(result: dict[str, Any]) -> None:
    print(f"subscribers on another host ({result['rate']} link, {result['seconds']:g} s of Polaris):")
    print(f"  {'subscriber':<20} {'group':<7} {'received':>9} {'share':>7} {'p50 ms':>8} {'p99 ms':>8}")
    for name in SUBSCRIBERS:
        for group in ("INS", "LiDAR", "camera", "clock"):
            g = result[name][group]
            print(f"  {name:<20} {group:<7} {g['messages'] - g['lost']:>5}/{g['messages']:<4}"
                  f"{100 * g['share']:>6.1f}% {g['p50_ms']:>8.2f} {g['p99_ms']:>8.2f}")


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python3 -m benchmark.remote")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--rate", default="1gbit", help="tbf rate of the link; 'none' for unshaped")
    parser.add_argument("--remote-profile", help="a Fast DDS profile file for the remote subscribers")
    parser.add_argument("--json", help="write the figures here too")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="acres_remote_") as tmp:
        result = measure_remote(args.seconds, Path(tmp), rate=None if args.rate == "none" else args.rate,
                                remote_profile=args.remote_profile)
    print(result["profile"])
    print_remote(result)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
