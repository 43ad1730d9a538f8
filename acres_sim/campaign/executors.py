"""Where a campaign's runs execute (ROS-free): as Ray tasks, on this machine (a Ray instance of its own,
bound to 127.0.0.1) or on a cluster (`--address`), or, where Ray is not installed, on threads of this
process (each run is a process of its own either way). Both give the same results (run.py's dicts);
a run cancelled before it finished gives None.
"""

from __future__ import annotations

import importlib.util
import ipaddress
import os
import socket
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any

from acres_sim.campaign.run import RunResult, RunSpec, execute_run

# A local Ray instance: its object store holds the runs' results (a report and a log of a few MB
# each) and no more; Ray's default would take 30 % of the machine's memory. No dashboard.
OBJECT_STORE_BYTES = 512 * 1024 * 1024
PLACEMENT_TIMEOUT_S = 10.0  # the driver's own node answers where a lost run was


def ray_installed() -> bool:
    return importlib.util.find_spec("ray") is not None


def keep_ray_on_loopback() -> None:
    """Before Ray is imported, for a Ray instance of this machine alone: every Ray process binds to
    127.0.0.1 (Ray's switch for single-machine clusters; a cluster's nodes need their real address)."""
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")


class ClusterUnreachable(Exception):
    """No Ray cluster answers at the address given (the message says what to check)."""


def cluster_endpoint(address: str) -> tuple[str, int] | None:
    """(host, port) of a Ray address, "HOST:PORT" or "ray://HOST:PORT" (a bare host: Ray's 6379);
    None for "auto" (Ray finds the cluster this machine started)."""
    rest = address.removeprefix("ray://")
    if rest == "auto":
        return None
    host, _, port = rest.rpartition(":") if ":" in rest else (rest, "", "6379")
    host = host.strip("[]")  # [::1]:6379
    try:
        number = int(port)
    except ValueError:
        raise ClusterUnreachable(f"the Ray address {address!r} is not HOST:PORT") from None
    if not host or not 0 < number < 65536:
        raise ClusterUnreachable(f"the Ray address {address!r} is not HOST:PORT")
    return host, number


def on_loopback(host: str) -> bool:
    """Whether every address the host name stands for is a loopback one (127.0.0.0/8, ::1)."""
    try:
        found = socket.getaddrinfo(host, None)
    except socket.gaierror:
        return False
    return bool(found) and all(ipaddress.ip_address(info[4][0].split("%")[0]).is_loopback for info in found)


def wait_for_cluster(host: str, port: int, timeout_s: float) -> None:
    """Until the cluster's port takes a connection; ClusterUnreachable after timeout_s."""
    deadline = time.monotonic() + timeout_s
    while True:
        left = deadline - time.monotonic()
        try:
            with socket.create_connection((host, port), timeout=max(0.1, min(2.0, left))):
                return
        except OSError as exc:
            last = exc
        if time.monotonic() + 0.5 > deadline:
            raise ClusterUnreachable(
                f"no Ray cluster answered at {host}:{port} within {timeout_s:g} s ({last.strerror or last}): "
                f"is `ray start --head --port {port}` running on {host}, and is that port open from this "
                "machine?")
        time.sleep(0.5)


class _Runs:
    _pending: Any

    @property
    def in_flight(self) -> int:
        return len(self._pending)


class LocalRuns(_Runs):
    """Runs on threads of this process (no Ray)."""

    where = "this machine (threads; Ray is not installed)"

    def __init__(self, workers: int | None):
        self.workers = workers or os.cpu_count() or 1
        self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="campaign-run")
        self._stop = threading.Event()
        self._pending: set[Future] = set()
        self._node = socket.gethostname()

    def submit(self, spec: RunSpec) -> None:
        self._pending.add(self._pool.submit(execute_run, spec, self._node, self._stop))

    def finished(self, timeout_s: float) -> list[RunResult | None]:
        if not self._pending:
            return []
        done, self._pending = wait(self._pending, timeout_s, FIRST_COMPLETED)
        return [None if f.cancelled() else f.result() for f in done]

    def cancel(self) -> None:
        self._stop.set()
        for f in list(self._pending):
            f.cancel()

    def close(self) -> None:
        from acres_sim.campaign.warm_runs import close_all

        self._pool.shutdown(wait=True, cancel_futures=True)
        close_all()


def _on_a_ray_node(spec: RunSpec, placements: Any) -> RunResult:
    import ray

    node = ray.get_runtime_context().get_node_id()
    placements.put.remote(spec.run.name, node)
    return execute_run(spec, node)


class _Placements:
    """(a Ray actor on the driver's node) The node each run started on, as the run said: a node that
    dies takes its runs' results with it, and Ray's error does not always name it."""

    def __init__(self) -> None:
        self._nodes: dict[str, str] = {}

    def put(self, run: str, node: str) -> None:
        self._nodes[run] = node

    def take(self, run: str) -> str:
        """Where the run started ("" if it never said), forgotten."""
        return self._nodes.pop(run, "")


class RayRuns(_Runs):
    """Runs as Ray tasks (one CPU each), on a cluster given by its address or on a local instance."""

    def __init__(self, address: str | None, workers: int | None):
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        self._ray = ray
        if address:
            ray.init(address=address, log_to_driver=False)
            self.where = f"the Ray cluster at {address}"
        else:
            # "local": an instance of its own, never a cluster `ray start` left on this machine (Ray's
            # default without an address would join that one)
            ray.init(address="local", num_cpus=workers or os.cpu_count() or 1, include_dashboard=False,
                     object_store_memory=OBJECT_STORE_BYTES, log_to_driver=False)
            self.where = "this machine (a local Ray instance)"
        cpus = int(ray.cluster_resources().get("CPU", 1))
        self.workers = workers or cpus
        self._task = ray.remote(num_cpus=1, max_retries=0)(_on_a_ray_node)
        here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
        self._placements = ray.remote(num_cpus=0)(_Placements).options(scheduling_strategy=here).remote()
        self._pending: dict[Any, RunSpec] = {}

    def submit(self, spec: RunSpec) -> None:
        self._pending[self._task.remote(spec, self._placements)] = spec

    def finished(self, timeout_s: float) -> list[RunResult | None]:
        if not self._pending:
            return []
        ray = self._ray
        done, _ = ray.wait(list(self._pending), num_returns=1, timeout=timeout_s)
        out: list[RunResult | None] = []
        for ref in done:
            spec = self._pending.pop(ref)
            try:
                out.append(ray.get(ref))
                self._placements.take.remote(spec.run.name)  # forgotten: the run came back
            except ray.exceptions.TaskCancelledError:
                out.append(None)
            except ray.exceptions.RayError as exc:  # its worker or node died: the run has no verdict
                try:
                    node = ray.get(self._placements.take.remote(spec.run.name), timeout=PLACEMENT_TIMEOUT_S)
                except ray.exceptions.RayError:
                    node = ""  # unknown: the run is lost all the same
                out.append(RunResult.lost(spec.run, node, f"{type(exc).__name__}: {exc}"[:500]))
        return out

    def cancel(self) -> None:
        for ref in self._pending:
            self._ray.cancel(ref)  # a KeyboardInterrupt in the task: it stops its runner

    def close(self) -> None:
        self._ray.shutdown()
