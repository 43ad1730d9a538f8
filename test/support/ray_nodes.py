"""Two Ray nodes on this machine standing in for two machines (Ray's own mini-cluster for tests): one
CPU each, every Ray process bound to 127.0.0.1 (Ray's switch for clusters of one machine) so that no
test traffic leaves the loopback, no dashboard, object stores of 150 MB instead of Ray's 30 % of
memory each."""

from __future__ import annotations

import os

import pytest

LOOPBACK_SWITCH = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


def keep_ray_on_loopback() -> None:
    """Before Ray is first imported (Ray reads the switch then): every Ray process of the tests, and
    of the commands they start, binds to 127.0.0.1."""
    os.environ[LOOPBACK_SWITCH] = "0"


@pytest.fixture
def two_ray_nodes():
    pytest.importorskip("ray", reason="Ray is not installed (the learners' extras: ACRES_LEARN=1 bootstrap)")
    from ray.cluster_utils import Cluster

    args = {"num_cpus": 1, "object_store_memory": 150_000_000, "node_ip_address": "127.0.0.1"}
    cluster = Cluster(initialize_head=True, head_node_args={**args, "include_dashboard": False})
    try:
        cluster.add_node(**args)
        yield cluster
    finally:
        cluster.shutdown()
