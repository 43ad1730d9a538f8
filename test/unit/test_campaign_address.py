"""A campaign's cluster address (acres_sim/campaign/executors.py): read as Ray reads it, and
loopback told apart (the wait for a cluster's port: test/integration/test_campaign_cluster_wait.py)."""

from __future__ import annotations

import pytest

from acres_sim.campaign.executors import ClusterUnreachable, cluster_endpoint, on_loopback


def test_addresses_are_read_as_ray_reads_them():
    assert cluster_endpoint("127.0.0.1:6380") == ("127.0.0.1", 6380)
    assert cluster_endpoint("ray://10.0.0.5:10001") == ("10.0.0.5", 10001)
    assert cluster_endpoint("[::1]:6379") == ("::1", 6379)
    assert cluster_endpoint("head.example") == ("head.example", 6379)
    assert cluster_endpoint("auto") is None
    for bad in ("127.0.0.1:port", "127.0.0.1:0", ":6379", "10.0.0.5:70000"):
        with pytest.raises(ClusterUnreachable, match="is not HOST:PORT"):
            cluster_endpoint(bad)


def test_loopback_names_and_addresses_are_told_from_others():
    assert on_loopback("127.0.0.1") and on_loopback("127.3.0.1") and on_loopback("localhost")
    assert not on_loopback("10.0.0.5") and not on_loopback("192.0.2.7")
    assert not on_loopback("no-such-host.invalid")
