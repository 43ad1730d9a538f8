"""Parameters a node reads once are read-only, with their ranges in their descriptors: `ros2 param
set` (the parameter services) is refused with a reason instead of answering success and changing
nothing, and `ros2 param describe` shows the range. A real sim_control process (it needs no game to
serve its parameters); ROS_DOMAIN_ID 127."""

from __future__ import annotations

import sys

from support.bridge import Graph, Process, call_service, free_port, ros_env
from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
from rcl_interfaces.srv import DescribeParameters, GetParameters, SetParameters

DOMAIN = 127


def test_a_fixed_parameter_refuses_to_be_set_and_describes_its_range():
    port = free_port()
    node = Process([sys.executable, "-m", "acres_sim.nodes.sim_control", "--ros-args",
                    "-p", f"control_port:={port}"], ros_env(DOMAIN), "sim_control")
    graph = Graph(DOMAIN)
    try:
        clients = {kind: graph.node.create_client(kind, f"/sim_control/{name}") for kind, name in (
            (SetParameters, "set_parameters"), (GetParameters, "get_parameters"),
            (DescribeParameters, "describe_parameters"))}
        graph.spin_until(lambda: all(c.service_is_ready() for c in clients.values()), 60, "sim_control")
        wanted = Parameter(name="control_port", value=ParameterValue(
            type=ParameterType.PARAMETER_INTEGER, integer_value=port + 1))
        result = call_service(graph, clients[SetParameters], 20, 3, parameters=[wanted]).results[0]
        assert not result.successful and "read-only" in result.reason.lower(), result
        got = call_service(graph, clients[GetParameters], 20, 3, names=["control_port"]).values[0]
        assert got.integer_value == port  # unchanged
        described = call_service(graph, clients[DescribeParameters], 20, 3,
                                 names=["control_port", "barrier_timeout_s", "feedback_steps"]).descriptors
        port_range, feedback_range = described[0].integer_range[0], described[2].integer_range[0]
        assert described[0].read_only and (port_range.from_value, port_range.to_value) == (1, 65535)
        assert described[1].floating_point_range[0].from_value == 0.0
        assert (feedback_range.from_value, feedback_range.to_value) == (1, 1200)
    finally:
        graph.close()
        node.stop()
