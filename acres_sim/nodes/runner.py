"""The one way to be a node here: RunnableNode (parameters from a table, start, stop, executors)
and run(), every executable's main: init, signals, executors in threads, clean shutdown, and a
start-up failure reported once, as one line, with exit code 2 (a refused value) or 1 (nothing to do).
"""

from __future__ import annotations

import math
import re
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import rclpy
from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
from rclpy.exceptions import InvalidParameterTypeException, InvalidParameterValueException
from rclpy.executors import Executor, ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions

from acres_sim.heap import PeriodicTrim
from acres_sim.middleware import dds
from acres_sim.nodes.parameters import NodeParameters, ParameterError, ParamSpec
from acres_sim.stop_signals import restore, stop_on_signals


class RosLogging:
    """The logging.Logger calls the ROS-free clients make (StreamClient, VehicleClient), sent to an
    rclpy logger as one line each (%-formatted only when given arguments, like logging: a peer's
    text with a '%' in it stays as it is)."""

    def __init__(self, logger: Any):
        self._logger = logger

    def info(self, msg: str, *args: Any) -> None:
        self._logger.info(msg % args if args else msg)

    def warning(self, msg: str, *args: Any) -> None:
        self._logger.warning(msg % args if args else msg)

    def error(self, msg: str, *args: Any) -> None:
        self._logger.error(msg % args if args else msg)

    def exception(self, msg: str, *args: Any) -> None:
        exc = sys.exc_info()[1]
        self._logger.error(f"{msg % args if args else msg}: {type(exc).__name__}: {exc}")


class StartFailed(Exception):
    """The node started but has nothing to do (e.g. no port could be opened); one line, exit 1."""


class RunnableNode(Node):
    """A node that run() starts, spins and stops. Subclasses set up in __init__ (raising
    ParameterError for a refused value) and override what they need of the rest."""

    def declare_table(self, table: NodeParameters) -> dict[str, Any]:
        """Declare every parameter of `table` with its description and range, read-only: a node reads
        them once, so `ros2 param set` is refused (with rclpy's reason) instead of changing nothing.
        Their values by name; a value outside its range is a ParameterError."""
        values: dict[str, Any] = {}
        for spec in table.specs:
            default = values[spec.default_from] if spec.default_from else spec.default
            try:
                declared = self.declare_parameter(spec.name, default, _descriptor(spec, default))
                values[spec.name] = declared.value
            except InvalidParameterValueException as exc:  # out of its range
                raise ParameterError(_out_of_range(spec, exc)) from None
            except InvalidParameterTypeException as exc:
                raise ParameterError(f"parameter {spec.name}: {exc}") from None
        return values

    def executors(self) -> list[Executor]:
        """The executors that spin this node (and any helper nodes of its), each in its own thread."""
        executor = SingleThreadedExecutor()
        executor.add_node(self)
        return [executor]

    def start(self) -> None:
        """After construction, before spinning: start threads and sockets (StartFailed: nothing to do)."""

    @property
    def finished(self) -> bool:
        """True when the node's work ended by itself (the process then exits 0)."""
        return False

    def stop(self) -> None:
        """Before the node is destroyed: stop threads and sockets, once the executors are shut down."""


def _descriptor(spec: ParamSpec, default: Any) -> ParameterDescriptor:
    # Numbers are dynamically typed so that `stats_period_s:=5` (an integer) is accepted; a parameter
    # without a default (None: not set) takes whatever type it is given.
    dynamic = default is None or (isinstance(default, (int, float)) and not isinstance(default, bool))
    descriptor = ParameterDescriptor(description=spec.description, dynamic_typing=dynamic, read_only=True)
    if spec.range is not None:
        low, high = spec.range
        if isinstance(default, int):
            descriptor.integer_range = [IntegerRange(from_value=int(low), to_value=int(high), step=1)]
        else:
            descriptor.floating_point_range = [FloatingPointRange(from_value=float(low),
                                                                  to_value=float(high))]
    return descriptor


def _out_of_range(spec: ParamSpec, exc: Exception) -> str:
    """The node's own words for a value outside its range (rclpy's message carries the value)."""
    assert spec.range is not None
    low, high = spec.range
    bound = f"{low:g}..{high:g}" if math.isfinite(high) else f"at least {low:g}"
    given = re.match(r"Invalid parameter value \((.*)\) for parameter", str(exc))
    return f"parameter {spec.name} must be {bound}, got {given.group(1) if given else exc}"


def spin_in_thread(executor: Any, stop: threading.Event, failures: list[BaseException],
                   name: str) -> threading.Thread:
    """Start executor.spin() in a daemon thread. spin() sleeps until something is due (a main thread
    polling spin_once(0.1) rebuilt the wait set ten times a second). When it ends, `stop` is set; an
    error in a callback goes into `failures`, for the main thread to raise: it ends the node."""

    def spin() -> None:
        try:
            executor.spin()
        except ExternalShutdownException:
            pass
        except BaseException as exc:  # noqa: BLE001 -- handed to the main thread, which raises it
            failures.append(exc)
        finally:
            stop.set()

    thread = threading.Thread(target=spin, name=name, daemon=True)
    thread.start()
    return thread


def run(make_node: Callable[[], RunnableNode], name: str, args: Sequence[str] | None = None, *,
        dds_profile: bool = False) -> int:
    """Run a node until SIGINT or SIGTERM (exit 0), or until it is finished. `dds_profile`: apply
    the package's Fast DDS profile before the participant starts, and log what is in force."""
    choice = dds.apply_profile() if dds_profile else None  # read by Fast DDS when the participant starts
    stop = threading.Event()  # set by a spinner that ended, and here once the node is to stop
    # Our own handlers (a flag: acres_sim.stop_signals): a node stops its threads (and logs so)
    # before rclpy shuts down.
    asked, previous = stop_on_signals()
    try:
        rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    except Exception as exc:  # noqa: BLE001 -- e.g. a malformed --ros-args: one line, no traceback
        print(f"{name}: cannot start ROS 2: {exc}", file=sys.stderr)
        restore(previous)
        return 2
    node: RunnableNode | None = None
    executors: list[Executor] = []
    spinners: list[threading.Thread] = []
    failures: list[BaseException] = []
    try:
        try:
            node = make_node()
        except ParameterError as exc:
            rclpy.logging.get_logger(name).fatal(str(exc))
            return 2
        if choice is not None:  # the participant exists with the first node: what it mapped is in force
            ok, line = dds.report(choice, dds.read_in_force())
            (node.get_logger().info if ok else node.get_logger().warning)(line)
        try:
            node.start()
        except StartFailed as exc:
            node.get_logger().error(str(exc))
            return 1
        executors = node.executors()
        spinners = [spin_in_thread(executor, stop, failures, f"{name}-executor-{index}")
                    for index, executor in enumerate(executors)]
        trim = PeriodicTrim()
        while not asked.is_set() and not stop.is_set() and not node.finished:
            time.sleep(0.2)
            trim()
        stop.set()
        if failures:
            raise failures[0]
        return 0
    finally:
        for executor in executors:
            executor.shutdown(timeout_sec=1.0)
        for spinner in spinners:
            spinner.join(1.0)
        if node is not None:
            node.stop()
            node.destroy_node()
        rclpy.try_shutdown()
        restore(previous)
