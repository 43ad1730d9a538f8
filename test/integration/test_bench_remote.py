"""Subscribers on another machine: a reliable and a best-effort subscriber on a second host, joined
to the bridge's host by a 1 Gbit/s link, receive at least 99 % (reliable) and 97 % (best effort) of
the clouds, images and INS that a local subscriber receives, when that host loads
config/fastdds_remote_host.xml. Without the file the best-effort one gets about half the clouds.

Both hosts are network namespaces this test creates (benchmark.remote.TestHosts), the
remote one with a /dev/shm and a machine id of its own, so it shares no memory with the bridge;
nothing is routed out of them. Skipped, with the reason, where namespaces cannot be created (not
root, no iproute2). ROS_DOMAIN_ID 198 (inside the namespaces).
"""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
REMOTE_PROFILE = REPO / "config" / "fastdds_remote_host.xml"


def test_remote_reliable_and_best_effort_subscribers_receive_what_a_local_one_does(tmp_path):
    pytest.importorskip("rclpy", reason="rclpy is needed")
    from benchmark.remote import HostsUnavailable, TestHosts, measure_remote

    try:
        with TestHosts(tag=f"acrt{__import__('os').getpid() % 10000}"):
            pass
    except HostsUnavailable as exc:
        pytest.skip(f"network namespaces for a second host cannot be created here: {exc}")
    # Deep counting readers: with rviz2's depth 5 a subscriber process that the loaded machine starves
    # for a moment drops what its own history cannot hold (96.6 % once in CI), which is its speed,
    # not the link's or the profile's. The bridge's writers keep their depth 5, so anything the link
    # or the middleware loses is still lost and counted.
    # Best effort may drop a sample whenever the receiving process is not scheduled for longer than
    # its 4 MB socket buffer lasts (about 30 ms of the link): 79 of 80 clouds once in CI, on a
    # loaded 2-core machine. 97 % over 12 s (120 clouds) allows three such drops and still fails the
    # defaults (49 % of the clouds, 78 % of the images: doc/performance.md).
    shares = {"remote reliable": 0.99, "remote best effort": 0.97}
    result = measure_remote(12.0, tmp_path, domain=198, remote_profile=str(REMOTE_PROFILE), deep=True)
    assert "DDS profile in force" in result["profile"], result["profile"]
    for group in ("INS", "LiDAR", "camera"):
        local = result["local reliable"][group]
        assert local["messages"] - local["lost"] > 0, (group, local)
        for name, least in shares.items():
            share = result[name][group]["share"]
            assert share >= least, f"{name} {group}: {100 * share:.1f} % of the local subscriber's messages"
