"""The wait for a campaign's cluster (acres_sim/campaign/executors.py), on real sockets: a port that
takes no connection is refused within the time given, naming what to check; one that listens is
reached at once."""

from __future__ import annotations

import socket
import time

import pytest

from acres_sim.campaign.executors import ClusterUnreachable, wait_for_cluster

pytestmark = pytest.mark.ros_free  # no ROS graph nor message: CI runs it on one distribution


def test_a_port_that_takes_no_connection_is_refused_in_time_and_a_listening_one_at_once():
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        port = listening.getsockname()[1]
        started = time.monotonic()
        wait_for_cluster("127.0.0.1", port, 5.0)
        assert time.monotonic() - started < 1.0
    started = time.monotonic()  # closed now: nothing listens
    with pytest.raises(ClusterUnreachable) as caught:
        wait_for_cluster("127.0.0.1", port, 1.5)
    waited = time.monotonic() - started
    assert 1.0 <= waited < 4.0
    said = str(caught.value)
    assert f"no Ray cluster answered at 127.0.0.1:{port} within 1.5 s" in said
    assert f"ray start --head --port {port}" in said
