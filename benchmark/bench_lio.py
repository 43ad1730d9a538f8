"""A real LiDAR odometry on the bridge's clouds: fake_game (Polaris, real time) -> sim_bridge with
lidar_fields:=xyzirt lidar_stamp:=start -> KISS-ICP (its Python API, default settings), once with the
per-point times (deskewing) and once without, against ground_truth/odom.

    make bench-lio            # or: python3 -m benchmark.bench_lio [--seconds 100] [--casters]

Prints, for both runs, the translation RMSE after aligning the trajectories (Horn), the final drift
in % of the path length, the mean error over 50 m stretches (a closed lap hides a standing estimate
from the final drift, not from this) and the time KISS-ICP took per cloud. Needs `kiss-icp`
(tools/requirements-bench.txt); not a test.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from acres_sim.viewer.snapshot_render import FrameStore, cloud_fields, transform_matrix
from harness.graph import Graph, free_port
from harness.processes import start_bridge, start_module


def collect(seconds: float) -> tuple[list, FrameStore, str]:
    """Clouds (stamp, xyz float64, time float64) and the ground-truth tree for `seconds` of driving."""
    from nav_msgs.msg import Odometry
    from rclpy.qos import DurabilityPolicy, QoSProfile
    from sensor_msgs.msg import PointCloud2
    from tf2_msgs.msg import TFMessage

    domain, port = 199, free_port()
    game = start_module("acres_sim.fake_game", ["--port", str(port), "--vehicle", "polaris",
                                                "--stats-period-s", "600"], domain)
    game.wait_for("ACRES_SENSOR_STREAM_LISTENING", 60)
    bridge = start_bridge(port, domain, ["lidar_fields:=xyzirt", "lidar_stamp:=start", "stats_period_s:=0.0"],
                          namespace="/polaris")
    graph = Graph(domain)
    clouds: list = []
    store = FrameStore()
    frame_id = {"lidar": ""}

    def on_cloud(msg) -> None:
        fields = [(f.name, f.offset, f.datatype) for f in msg.fields]
        cells = cloud_fields(bytes(msg.data), fields, msg.point_step, msg.width * msg.height)
        xyz = np.stack([cells["x"], cells["y"], cells["z"]], axis=1).astype(np.float64)
        keep = np.isfinite(xyz).all(axis=1)
        stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
        clouds.append((stamp, xyz[keep], cells["time"][keep].astype(np.float64)))
        frame_id["lidar"] = msg.header.frame_id

    def on_truth(msg) -> None:
        p, q = msg.pose.pose.position, msg.pose.pose.orientation
        store.base = msg.child_frame_id
        store.add_world_pose(msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9,
                             transform_matrix((p.x, p.y, p.z), (q.x, q.y, q.z, q.w)))

    def on_static(msg) -> None:
        for t in msg.transforms:
            tr, q = t.transform.translation, t.transform.rotation
            store.add_static(t.header.frame_id, t.child_frame_id,
                             transform_matrix((tr.x, tr.y, tr.z), (q.x, q.y, q.z, q.w)))

    try:
        graph.node.create_subscription(PointCloud2, "/polaris/lidar/points", on_cloud, QoSProfile(depth=50))
        graph.node.create_subscription(Odometry, "/polaris/ground_truth/odom", on_truth,
                                       QoSProfile(depth=500))
        graph.node.create_subscription(TFMessage, "/tf_static", on_static,
                                       QoSProfile(depth=10, durability=DurabilityPolicy.TRANSIENT_LOCAL))
        deadline = time.monotonic() + 60
        while not clouds and time.monotonic() < deadline:
            graph.executor.spin_once(timeout_sec=0.05)
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            graph.executor.spin_once(timeout_sec=0.05)
    finally:
        graph.close()
        bridge.stop()
        game.stop()
    return clouds, store, frame_id["lidar"]


def horn_rmse(estimate: np.ndarray, truth: np.ndarray) -> float:
    """Translation RMSE after the rigid alignment (rotation + translation) that minimises it."""
    mu_e, mu_t = estimate.mean(0), truth.mean(0)
    u, _, vt = np.linalg.svd((estimate - mu_e).T @ (truth - mu_t))
    d = np.diag([1.0, 1.0, np.sign(np.linalg.det(vt.T @ u.T))])
    rotation = vt.T @ d @ u.T
    aligned = (estimate - mu_e) @ rotation.T + mu_t
    return float(np.sqrt(((aligned - truth) ** 2).sum(1).mean()))


def segment_error_percent(estimate: np.ndarray, truth: np.ndarray, length_m: float = 50.0) -> float:
    """Mean translation error of the motion over every stretch of `length_m` of driving, in % of
    it (as KITTI's relative error, translation only). Unlike the final drift it cannot be hidden by
    a closed loop, where doing nothing ends where it started."""
    travelled = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(truth, axis=0), axis=1))])
    errors = []
    for i in range(0, len(truth), 5):
        j = int(np.searchsorted(travelled, travelled[i] + length_m))
        if j >= len(truth):
            break
        errors.append(np.linalg.norm((estimate[j] - estimate[i]) - (truth[j] - truth[i])) / length_m)
    return 100.0 * float(np.mean(errors)) if errors else float("nan")


def run_kiss(clouds: list, with_times: bool) -> tuple[np.ndarray, float]:
    from kiss_icp.config.parser import load_config
    from kiss_icp.kiss_icp import KissICP

    odometry = KissICP(load_config(None))
    positions, spent = [], 0.0
    for _stamp, xyz, times in clouds:
        t0 = time.perf_counter()
        odometry.register_frame(xyz, times if with_times else np.array([]))
        spent += time.perf_counter() - t0
        positions.append(odometry.last_pose[:3, 3].copy())
    return np.array(positions), spent / max(1, len(clouds))


def casters_side_by_side(seconds: float, noise_seed: int = 0) -> int:
    """The fake game's own Polaris sweeps, every 0.1 s of world time for `seconds`, rendered in this
    process by the compiled caster and by the arrays (the same poses both ways, nothing dropped:
    a lockstep run's clouds), KISS-ICP with the per-point times on each. noise_seed: the range
    noise of sweep k is drawn from seed noise_seed + k, the same for both casters (another seed shows
    how far the noise alone moves the figures)."""
    from acres_sim.fake_game.simulation.simulation import AgentSimulator
    from acres_sim.fake_game.simulation.vehicles import vehicle_hello
    from acres_sim.stream.timing import column_firing_offsets

    figures = {}
    for compiled in (True, False):
        sim = AgentSimulator(vehicle_hello("polaris"), seed=42, noise=True)
        model, lidar = sim._lidar, sim.hello.lidar
        offsets = column_firing_offsets(lidar.columns, lidar.hz)
        per_point = np.repeat(offsets - offsets[0], lidar.rings)  # from the sweep's start, as xyzirt
        clouds, truth = [], []
        for k in range(1, int(seconds * lidar.hz) + 1):
            t_end = k / lidar.hz
            noise = np.random.default_rng(noise_seed + k)
            cloud = model.render_sweep(sim.scene, t_end + offsets, sim.lidar_pose, noise,
                                       compiled=compiled).reshape(-1, 4)
            keep = np.isfinite(cloud[:, 0])
            clouds.append((t_end, cloud[keep, :3].astype(np.float64), per_point[keep]))
            pose = sim.lidar_pose(t_end + 0.5 * (offsets[0] - offsets[-1]))
            matrix = np.eye(4)
            matrix[:3, :3], matrix[:3, 3] = pose.rotation, pose.position
            truth.append(matrix)
        first_inv = np.linalg.inv(truth[0])
        truth_xyz = np.array([(first_inv @ t)[:3, 3] for t in truth])
        path_m = float(np.linalg.norm(np.diff(truth_xyz, axis=0), axis=1).sum())
        estimate, _per_cloud = run_kiss(clouds, True)
        figures["compiled" if compiled else "arrays"] = {
            "rmse_m": horn_rmse(estimate, truth_xyz),
            "segment_error_percent": segment_error_percent(estimate, truth_xyz),
            "final_drift_percent": float(np.linalg.norm(estimate[-1] - truth_xyz[-1]) / path_m * 100.0)}
    print(f"KISS-ICP with the per-point times on {len(clouds)} sweeps rendered in turn, {path_m:.1f} m:")
    for name, r in figures.items():
        print(f"  {name:<9} translation RMSE {r['rmse_m']:7.3f} m   final drift "
              f"{r['final_drift_percent']:6.2f} % of the path   error over 50 m stretches "
              f"{r['segment_error_percent']:6.2f} %")
    print(json.dumps(figures))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=100.0,
                        help="driving time (100 s: one lap with its stop)")
    parser.add_argument("--casters", action="store_true",
                        help="no ROS: the game's sweeps rendered here by the compiled caster and the arrays")
    parser.add_argument("--noise-seed", type=int, default=0,
                        help="with --casters: the range noise's first seed")
    args = parser.parse_args()
    try:
        import kiss_icp  # noqa: F401
    except ImportError:
        print("bench_lio: kiss-icp is not installed: pip install -r tools/requirements-bench.txt "
              "(or make bench-lio)", file=sys.stderr)
        return 2
    if args.casters:
        return casters_side_by_side(args.seconds, args.noise_seed)
    clouds, store, lidar_frame = collect(args.seconds)
    # Ground truth of the LiDAR at the middle of each sweep (KISS-ICP deskews to the middle).
    truth, kept = [], []
    for k, (stamp, _xyz, times) in enumerate(clouds):
        sweep_mid = stamp + 0.5 * (times.max() if len(times) else 0.1)
        pose = store.lookup(lidar_frame, sweep_mid)
        if pose is not None:
            truth.append(pose)
            kept.append(clouds[k])
    first_inv = np.linalg.inv(truth[0])
    truth_xyz = np.array([(first_inv @ t)[:3, 3] for t in truth])
    path_m = float(np.linalg.norm(np.diff(truth_xyz, axis=0), axis=1).sum())
    result: dict = {"clouds": len(kept), "path_m": path_m}
    for name, with_times in (("with per-point times", True), ("without", False)):
        estimate, per_cloud_s = run_kiss(kept, with_times)
        drift = float(np.linalg.norm(estimate[-1] - truth_xyz[-1]) / path_m * 100.0)
        result[name] = {"rmse_m": horn_rmse(estimate, truth_xyz), "final_drift_percent": drift,
                        "segment_error_percent": segment_error_percent(estimate, truth_xyz),
                        "kiss_ms_per_cloud": per_cloud_s * 1e3}
    print(f"KISS-ICP (default settings) on {len(kept)} Polaris clouds, {path_m:.1f} m of driving "
          f"(lidar_fields:=xyzirt lidar_stamp:=start):")
    for name in ("with per-point times", "without"):
        r = result[name]
        print(f"  {name:<22} translation RMSE {r['rmse_m']:7.3f} m   final drift "
              f"{r['final_drift_percent']:6.2f} % of the path   error over 50 m stretches "
              f"{r['segment_error_percent']:6.2f} %   ({r['kiss_ms_per_cloud']:.0f} ms per cloud)")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
