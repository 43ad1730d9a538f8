"""make demo: fake_game and sim_bridge for one vehicle, a live table of what arrives, then a snapshot.

    DEMO_SECONDS=20 DEMO_VEHICLE=polaris DEMO_PORT=5601 python3 -m acres_sim.viewer.demo

The table (rich, refreshed in place) shows per topic the rate against the rate the Hello promises,
MB/s, the game -> bridge latency p50 / p99 and the drops the bridge reports, plus the connection and
the simulation clock. Without a terminal (CI, a pipe) it prints one plain line per second instead.
DEMO_SECONDS (0 = until Ctrl-C) count from the first cloud, so that a slow start (fake_game builds
its world first) does not eat into them; then it writes the snapshot PNG, prints its path and exits
0, on Ctrl-C too. No cloud within STARTUP_LIMIT_S is an error. The logs of both processes are under
log/demo/.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import deque
from pathlib import Path
from types import SimpleNamespace

from acres_sim import topics
from acres_sim.stream.protocol import DEFAULT_STREAM_PORT

# topic (relative to the namespace unless absolute) -> (message type, frame type of its rate)
TOPICS = (
    (topics.CLOCK, "Clock", "clock"),
    (topics.LIDAR_POINTS, "PointCloud2", "lidar"),
    (topics.CAMERA_IMAGE, "Image", "camera"),
    (topics.CAMERA_INFO, "CameraInfo", "camera"),
    (topics.INS_FIX, "NavSatFix", "ins"),
    (topics.INS_IMU, "Imu", "ins"),
    (topics.INS_ODOM, "Odometry", "ins"),
    (topics.GROUND_TRUTH_ODOM, "Odometry", "ins"),
    (topics.TF, "TFMessage", "ins"),
)
SUMMARY_TOPICS = (topics.CLOCK, topics.LIDAR_POINTS, topics.CAMERA_IMAGE, topics.INS_ODOM)  # the plain line
RATE_WINDOW_S = 2.0
STARTUP_LIMIT_S = 120.0  # from start to the first cloud: fake_game builds its world in a few seconds


class TopicMeter:
    """Messages and bytes of one topic over the last RATE_WINDOW_S seconds."""

    def __init__(self) -> None:
        self.events: deque[tuple[float, int]] = deque()
        self.total = 0

    def add(self, size: int) -> None:
        self.events.append((time.monotonic(), size))
        self.total += 1

    def rate_and_mbps(self) -> tuple[float, float]:
        cutoff = time.monotonic() - RATE_WINDOW_S
        while self.events and self.events[0][0] < cutoff:
            self.events.popleft()
        return len(self.events) / RATE_WINDOW_S, sum(s for _, s in self.events) / RATE_WINDOW_S / 1e6


def _take_the_terminal() -> None:
    """Make this process group the terminal's foreground group, so that Ctrl-C reaches the demo and
    its children but not `make` (which would report "Interrupt" / "Error 130")."""
    try:
        fd = sys.stdin.fileno()
        if not os.isatty(fd):
            return
        signal.signal(signal.SIGTTOU, signal.SIG_IGN)
        os.setpgid(0, 0)
        os.tcsetpgrp(fd, os.getpgrp())
    except OSError:
        pass  # not a job-control terminal: Ctrl-C still works, make may say "Interrupt"


def _start(name: str, args: list[str], logs: Path) -> subprocess.Popen:
    log = open(logs / f"{name}.log", "w")  # noqa: SIM115 -- kept open for the child's lifetime
    return subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)


def _stop(procs: list[subprocess.Popen]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
    for proc in procs:
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


class Demo:
    def __init__(self, node, namespace: str) -> None:
        self.node = node
        self.namespace = namespace
        self.meters: dict[str, TopicMeter] = {}
        self.diag: dict[str, str] = {}
        self.clock_s = float("nan")
        from rclpy.qos import QoSProfile, ReliabilityPolicy

        from acres_sim.middleware.message_types import message_type

        for topic, spec, _ in TOPICS:
            full = topic if topic.startswith("/") else f"{namespace}/{topic}"
            meter = self.meters.setdefault(topic, TopicMeter())
            best_effort = topic == topics.CLOCK
            qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT if best_effort
                             else ReliabilityPolicy.RELIABLE)
            node.create_subscription(message_type(spec), full, lambda data, m=meter: m.add(len(data)),
                                     qos, raw=True)
        from diagnostic_msgs.msg import DiagnosticArray
        from rosgraph_msgs.msg import Clock

        node.create_subscription(Clock, topics.CLOCK, self._on_clock,
                                 QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT))
        node.create_subscription(DiagnosticArray, topics.DIAGNOSTICS, self._on_diagnostics, 10)

    def _on_clock(self, msg) -> None:
        self.clock_s = msg.clock.sec + msg.clock.nanosec * 1e-9

    def _on_diagnostics(self, msg) -> None:
        for status in msg.status:
            if status.name.startswith(f"{self.namespace}/sim_bridge"):
                self.diag = {kv.key: kv.value for kv in status.values}
                self.diag["_message"] = status.message

    def rows(self) -> list[tuple[str, str, str, str, str, str, str]]:
        out = []
        for topic, _, kind in TOPICS:
            rate, mbps = self.meters[topic].rate_and_mbps()
            expected = self.diag.get(f"{kind} expected rate (Hz)", "-")
            out.append((topic, str(self.meters[topic].total), f"{rate:6.1f}", expected, f"{mbps:6.2f}",
                        f"{self.diag.get(f'{kind} latency p50 (ms)', '-')} / "
                        f"{self.diag.get(f'{kind} latency p99 (ms)', '-')}",
                        self.diag.get(f"{kind} drops", "-")))
        return out

    def status_line(self, elapsed: float | None, seconds: float) -> str:
        limit = f"{seconds:g} s" if seconds > 0 else "Ctrl-C stops"
        progress = "waiting for the first cloud" if elapsed is None else f"{elapsed:5.1f} s of {limit}"
        return (f"connection {self.diag.get('connection', 'waiting')}: {self.diag.get('_message', '-')} | "
                f"sim clock {self.clock_s:8.2f} s | {progress}")

    def table(self, elapsed: float | None, seconds: float):
        from rich.table import Table

        table = Table(title=f"acres_sim demo: {self.namespace}", caption=self.status_line(elapsed, seconds))
        table.add_column("topic")
        for name in ("messages", "rate (Hz)", "expected (Hz)", "MB/s", "game->bridge p50 / p99 (ms)",
                     "drops"):
            table.add_column(name, justify="right")
        for row in self.rows():
            table.add_row(*row)
        return table

    def plain_line(self, elapsed: float | None, seconds: float) -> str:
        parts = [f"{topic} {count} msgs {rate.strip()}/{expected} Hz"
                 for topic, count, rate, expected, _, _, _ in self.rows()
                 if topic in SUMMARY_TOPICS]
        mbps = sum(self.meters[t].rate_and_mbps()[1] for t, _, _ in TOPICS)
        shown = "waiting" if elapsed is None else f"{elapsed:5.1f} s"
        return f"demo {shown} | {' | '.join(parts)} | {mbps:.1f} MB/s | " \
               f"drops {self.diag.get('drops', '-')} | {self.status_line(elapsed, seconds)}"


def main() -> int:
    seconds = float(os.environ.get("DEMO_SECONDS", "20"))
    vehicle = os.environ.get("DEMO_VEHICLE", "polaris")
    port = int(os.environ.get("DEMO_PORT", str(DEFAULT_STREAM_PORT)))
    out = Path(os.environ.get("DEMO_SNAPSHOT", "acres_demo_snapshot.png"))
    namespace = f"/{vehicle}"
    _take_the_terminal()
    stop = {"now": False}
    signal.signal(signal.SIGINT, lambda *_: stop.update(now=True))
    signal.signal(signal.SIGTERM, lambda *_: stop.update(now=True))

    import rclpy

    from acres_sim.viewer import snapshot

    logs = Path("log") / "demo"
    logs.mkdir(parents=True, exist_ok=True)
    procs = [
        _start("fake_game", [sys.executable, "-m", "acres_sim.fake_game", "--port", str(port), "--vehicle",
                             vehicle], logs),
        _start("sim_bridge", [sys.executable, "-m", "acres_sim.nodes.sim_bridge", "--ros-args",
                              "-r", f"__ns:={namespace}", "-p", f"port:={port}"], logs),
    ]
    print(f"demo: fake_game ({vehicle} on 127.0.0.1:{port}) and sim_bridge in {namespace}; logs in {logs}/; "
          f"{'Ctrl-C stops' if seconds <= 0 else f'{seconds:g} s (DEMO_SECONDS), Ctrl-C stops earlier'}",
          flush=True)
    rclpy.init(signal_handler_options=rclpy.signals.SignalHandlerOptions.NO)
    node = rclpy.create_node("acres_demo")
    demo = Demo(node, namespace)
    shot = snapshot.subscribe(node, SimpleNamespace(
        namespace=namespace, lidar_topic=topics.LIDAR_POINTS, image_topic=topics.CAMERA_IMAGE,
        odom_topic=topics.INS_ODOM, truth_topic=topics.GROUND_TRUTH_ODOM))
    launched = time.monotonic()
    start: float | None = None  # the first cloud's arrival: DEMO_SECONDS count from there
    failed = ""

    def elapsed() -> float | None:
        return None if start is None else time.monotonic() - start

    try:
        live = None
        if sys.stdout.isatty():
            from rich.live import Live

            live = Live(demo.table(None, seconds), refresh_per_second=4, transient=False)
            live.start()
        next_line = launched + 1.0
        while not stop["now"] and (seconds <= 0 or start is None or time.monotonic() - start < seconds):
            rclpy.spin_once(node, timeout_sec=0.05)
            now = time.monotonic()
            if start is None and demo.meters[topics.LIDAR_POINTS].total:
                start = now
            dead = [p for p in procs if p.poll() is not None]
            if dead:
                name = "fake_game" if dead[0] is procs[0] else "sim_bridge"
                failed = (f"demo: {name} exited with code {dead[0].returncode}; see {logs}/{name}.log "
                          f"(port {port} in use? try DEMO_PORT=5611 make demo)")
                break
            if start is None and now - launched > STARTUP_LIMIT_S:
                failed = (f"demo: no cloud on {namespace}/lidar/points after {STARTUP_LIMIT_S:g} s; "
                          f"see {logs}/")
                break
            if live is not None:
                live.update(demo.table(elapsed(), seconds))
            elif now >= next_line:
                next_line += 1.0
                print(demo.plain_line(elapsed(), seconds), flush=True)
        if live is not None:
            live.update(demo.table(elapsed(), seconds))
            live.stop()
        published = shot.published()
    finally:
        _stop(procs)
        node.destroy_node()
        rclpy.try_shutdown()
    if failed:
        print(failed, file=sys.stderr)
        return 1
    missing = snapshot.missing_topics(shot.counts, published)
    data = snapshot.build_snapshot(shot.got, f"acres_sim demo: {namespace}, {elapsed() or 0.0:.0f} s")
    if missing or data.clouds == 0:
        what = ", ".join(missing) or "lidar/points in the world frame"
        print(f"demo: no snapshot: nothing arrived on {what} (see {logs}/)", file=sys.stderr)
        return 1
    path = snapshot.render_png(data, out)
    print(f"demo: snapshot written to {path.resolve()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
