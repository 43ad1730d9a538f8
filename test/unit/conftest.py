"""Unit tests start no process, open no network socket and start no ROS graph: each of those is
refused here with a message that says where such a test belongs."""

from __future__ import annotations

import socket
import subprocess

import pytest

_WHERE = "a unit test {what}; move it to test/integration"


@pytest.fixture(autouse=True)
def _no_processes_sockets_or_graph(monkeypatch):
    def refuse(what: str):
        def call(*_args, **_kwargs):
            raise AssertionError(_WHERE.format(what=what))
        return call

    monkeypatch.setattr(subprocess.Popen, "__init__", refuse("starts a process"))
    for method in ("connect", "connect_ex", "bind", "listen"):
        monkeypatch.setattr(socket.socket, method, refuse(f"opens a socket ({method})"))
    try:
        import rclpy
    except ImportError:  # the ROS-free tests still run
        return
    monkeypatch.setattr(rclpy, "init", refuse("starts a ROS graph (rclpy.init)"))
