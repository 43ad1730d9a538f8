"""Campaigns as a user runs them (`python -m acres_sim.campaign.cli`, each run the scenario runner with a
stack in a ROS domain leased on this host): a grid x random sweep over a bale's place writes a table
whose verdicts follow the bale, each run's report and log and a picture; Ctrl-C keeps the table of
what finished and leaves no process behind; the campaign resumes without redoing a finished run and
refuses to resume once its scenario changed; a silent stack and a run past its wall-clock limit are
told apart (error, timeout); and, with Ray installed, 12 runs on a two-node Ray cluster (both nodes
on 127.0.0.1) are spread over both nodes, stopped and resumed, and a node that dies in the middle
leaves errors naming it, which the resume runs again."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("rclpy", reason="rclpy is needed")
pytest.importorskip("ackermann_msgs", reason="ackermann_msgs is not installed")
pytest.importorskip("acres_interfaces.msg", reason="acres_interfaces is not built (see the README)")

from acres_sim.campaign.campaign_file import load_campaign  # noqa: E402

from harness.bale_sweep import CRITERIA, DRIVER, SCENARIO, write_campaign  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def _campaign(tmp_path: Path, body: str, driver: str = "--speed 3") -> Path:
    return write_campaign(tmp_path, body, driver)


def _bale_on_and_beside_the_track(tmp_path: Path, draws: int, seed: int) -> Path:
    """The bale on the track and beside it, each with `draws` draws of dust."""
    return _campaign(tmp_path, "grid:\n  objects.bale1.pose.y: [-28.0, -20.0]\n"
                               f"random:\n  runs: {draws}\n  seed: {seed}\n"
                               "  conditions.dust: {uniform: [0.0, 0.3]}\n")


def _env() -> dict[str, str]:
    env = dict(os.environ)
    # as a user's shell: nothing keeps Ray on loopback by hand (the test session's Ray does)
    env.pop("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", None)
    path = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH", "")]))
    env.update(PYTHONUNBUFFERED="1", PYTHONPATH=path)
    return env


def _start(campaign: Path, out: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "acres_sim.campaign.cli", str(campaign), "--out", str(out),
                             *extra], env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _run(campaign: Path, out: Path, *extra: str, timeout_s: float = 600.0) -> tuple[int, str]:
    proc = _start(campaign, out, *extra)
    output, _ = proc.communicate(timeout=timeout_s)
    return proc.returncode, output


def _table(out: Path) -> list[dict[str, str]]:
    with open(out / "runs.csv", newline="") as f:
        return list(csv.DictReader(f))


def _rows_when(out: Path, proc: subprocess.Popen, at_least: int, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()[0]
        if (out / "runs.csv").exists() and len(_table(out)) >= at_least:
            return
        time.sleep(0.2)
    raise AssertionError(f"no {at_least} finished runs within {timeout_s:g} s")


def _stop(proc: subprocess.Popen) -> str:
    proc.send_signal(signal.SIGINT)
    output, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, output
    return output


def _leftovers(where: Path) -> list[str]:
    """Processes of the campaign's runs still alive: every runner and what it starts work in the
    campaign file's directory."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and Path(os.readlink(proc / "cwd")).is_relative_to(where):
                found.append((proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()[:200])
        except OSError:
            continue  # ended meanwhile, or not ours to read
    return found


def _stacks_under(ancestor: int) -> list[float]:
    """When each run's stack (a process of its own for every run, on a warm session too) descending
    from process `ancestor` started (seconds since the epoch)."""
    boot = next(float(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                if line.startswith("btime"))
    ticks = os.sysconf("SC_CLK_TCK")
    out = []
    for proc in Path("/proc").iterdir():
        try:
            if not proc.name.isdigit() or DRIVER.name.encode() not in (proc / "cmdline").read_bytes():
                continue
            pid, started = int(proc.name), None
            while pid > 1 and pid != ancestor:
                fields = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
                started = started if started is not None else boot + int(fields[19]) / ticks
                pid = int(fields[1])
            if pid == ancestor:
                out.append(started)
        except (OSError, ValueError):
            continue  # ended meanwhile
    return out


def _none_left(where: Path) -> None:
    deadline = time.monotonic() + 15
    while _leftovers(where) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _leftovers(where), _leftovers(where)


def _check_table(out: Path, campaign: Path, rows: list[dict[str, str]]) -> None:
    expected = {r.name: r.values for r in load_campaign(campaign).runs()}
    assert list(rows[0]) == ["run", "objects.bale1.pose.y", "conditions.dust", "status", "passed", *CRITERIA,
                             "node", "wall_s", "reason"]
    for row in rows:
        values = expected[row["run"]]
        assert float(row["objects.bale1.pose.y"]) == values["objects.bale1.pose.y"]
        assert float(row["conditions.dust"]) == values["conditions.dust"]  # the draw, to the last bit
        on_track = values["objects.bale1.pose.y"] == -28.0
        # the verdict follows the bale: hit on the track, clear beside it
        assert row["status"] == ("failed" if on_track else "passed"), row
        assert row["passed"] == str(not on_track)
        assert (float(row[CRITERIA[0]]) > 0.0) == on_track  # the contacts counted
        assert 2.5 < float(row[CRITERIA[1]]) < 3.5  # top speed: the driver's 3 m/s
        report = json.loads((out / "runs" / row["run"] / "report.json").read_text())
        assert report["status"] == row["status"] and report["duration_s"] == 3.0
        assert (out / "runs" / row["run"] / "episode.mcap").stat().st_size > 10_000
        assert (out / "runs" / row["run"] / "stack.log").exists()
        assert not list((out / "runs" / row["run"]).rglob(".in_use"))  # the work directory's own lock


def test_a_campaign_sweeps_stops_keeps_its_table_resumes_and_refuses_a_changed_scenario(tmp_path):
    campaign = _campaign(tmp_path, "grid:\n  objects.bale1.pose.y: [-28.0, -20.0]\n"
                                   "random:\n  runs: 2\n  seed: 3\n"
                                   "  conditions.dust: {uniform: [0.0, 0.3]}\n")
    out = tmp_path / "out"
    proc = _start(campaign, out, "--workers", "1")
    _rows_when(out, proc, 1, 300)
    first = _stop(proc)
    assert "stopping" in first
    stopped = _table(out)
    assert 1 <= len(stopped) < 4
    _none_left(tmp_path)
    assert (out / "pass_rate.png").exists() and (out / "index.html").exists()

    code, output = _run(campaign, out, "--workers", "2")
    assert code == 1, output  # two runs fail (the bale on the track)
    assert f"({len(stopped)} finished before)" in output
    rows = _table(out)
    assert [r["run"] for r in rows] == ["run0000", "run0001", "run0002", "run0003"]
    for before in stopped:  # not run again: the same row, the same wall time
        assert rows[int(before["run"][3:])] == before
    _check_table(out, campaign, rows)
    from matplotlib.image import imread

    assert imread(out / "pass_rate.png").shape[1] > 600  # a panel per swept key

    (tmp_path / "sweep.yaml").write_text(SCENARIO.replace("seed: 5", "seed: 6"))
    code, output = _run(campaign, out)
    assert code == 2 and "the scenario file changed" in output, output
    assert _table(out) == rows


def test_a_silent_stack_is_an_error_and_a_run_past_its_limit_a_timeout(tmp_path):
    # the stack answers for 1 s of world time; with stack_timeout_s 2 the runner ends the run (error),
    # with 1000 it waits for it until the run's wall-clock limit (timeout)
    campaign = _campaign(tmp_path, "grid:\n  stack_timeout_s: [2, 1000]\nrun_timeout_s: 25\n",
                         driver="--speed 2 --silent-after 1")
    code, output = _run(campaign, tmp_path / "out", "--workers", "2")
    assert code == 1, output
    rows = {r["stack_timeout_s"]: r for r in _table(tmp_path / "out")}
    assert rows["2"]["status"] == "error" and "stack_timeout_s" in rows["2"]["reason"], rows["2"]
    assert rows["1000"]["status"] == "timeout" and "25 s" in rows["1000"]["reason"], rows["1000"]
    assert float(rows["1000"]["wall_s"]) < 25 + 30  # its session stopped within the stop's wait
    _none_left(tmp_path)


def test_a_campaign_that_cannot_run_is_refused_before_any_run(tmp_path):
    campaign = _campaign(tmp_path, "grid:\n  objects.bale1.pose.x: [-4.5, -10.0]\n")  # on the Polaris
    code, output = _run(campaign, tmp_path / "out")
    assert code == 2 and "run0001 (objects.bale1.pose.x=-10.0)" in output, output
    assert not (tmp_path / "out" / "runs.csv").exists()


def test_twelve_runs_on_a_two_node_ray_cluster_use_both_nodes_stop_and_resume(tmp_path, two_ray_nodes):
    import ray

    ray.init(address=two_ray_nodes.address)
    try:
        nodes = {n["NodeID"] for n in ray.nodes() if n["Alive"]}
        assert {n["NodeManagerAddress"] for n in ray.nodes()} == {"127.0.0.1"} and len(nodes) == 2
    finally:
        ray.shutdown()
    campaign = _bale_on_and_beside_the_track(tmp_path, 6, 4)
    out = tmp_path / "out"
    proc = _start(campaign, out, "--address", two_ray_nodes.address)
    _rows_when(out, proc, 3, 300)
    first = _stop(proc)
    assert "2 at once on the Ray cluster at 127.0.0.1:" in first, first
    stopped = _table(out)
    code, output = _run(campaign, out, "--address", two_ray_nodes.address)
    assert code == 1, output
    rows = _table(out)
    assert len(rows) == 12 and f"({len(stopped)} finished before)" in output
    for before in stopped:
        assert rows[int(before["run"][3:])] == before
    _check_table(out, campaign, rows)
    assert {r["node"] for r in rows} == nodes  # both nodes ran runs
    assert sum(r["status"] == "passed" for r in rows) == 6
    assert (out / "pass_rate.png").exists()
    _none_left(tmp_path)


def test_a_node_lost_mid_campaign_leaves_errors_naming_it_and_its_runs_run_again_on_resume(
        tmp_path, two_ray_nodes):
    """The worker node dies while it runs one of the campaign's runs: that run is an error naming the
    node, the campaign goes on with the head node alone to its end, and the resume runs the lost run
    again (and nothing else), after which the table is what an undisturbed campaign gives."""
    (worker,) = two_ray_nodes.worker_nodes
    campaign = _bale_on_and_beside_the_track(tmp_path, 2, 5)
    out = tmp_path / "out"
    proc = _start(campaign, out, "--address", two_ray_nodes.address)
    # once a run's stack has worked 1 s on the worker node (its processes descend from that node's
    # raylet): the run is under way there (a warm session's runner is there between runs too)
    raylet = worker.all_processes["raylet"][0].process.pid
    deadline = time.monotonic() + 300
    while not any(time.time() - started > 1.0 for started in _stacks_under(raylet)):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[0]
        time.sleep(0.2)
    two_ray_nodes.remove_node(worker, allow_graceful=False)
    output, _ = proc.communicate(timeout=600)
    assert proc.returncode == 1, output
    rows = _table(out)
    lost = [r for r in rows if r["reason"].startswith("lost with its node")]
    assert len(rows) == 4 and len(lost) == 1, output
    assert lost[0]["status"] == "error" and lost[0]["node"] == worker.node_id, lost
    assert f"lost with its node {worker.node_id}: " in lost[0]["reason"]
    assert f"{lost[0]['run']} error" in output
    _none_left(tmp_path)  # the lost run's session ended with its node
    code, again = _run(campaign, out, "--address", two_ray_nodes.address)
    assert code == 1, again
    assert "(3 finished before, 1 lost with their node run again)" in again, again
    assert len(re.findall(r"run\d+ (passed|failed|error|timeout) ", again)) == 1  # the lost one only
    after = _table(out)
    assert [r for r in after if r["run"] != lost[0]["run"]] == [r for r in rows if r["run"] != lost[0]["run"]]
    _check_table(out, campaign, after)
    _none_left(tmp_path)


def test_a_cluster_address_that_does_not_answer_ends_the_campaign_at_once_naming_it(tmp_path):
    pytest.importorskip("ray", reason="Ray is not installed (the learners' extras: ACRES_LEARN=1 bootstrap)")
    from harness.graph import free_port

    campaign = _campaign(tmp_path, "grid:\n  objects.bale1.pose.y: [-28.0]\n")
    port = free_port()  # nothing listens there
    started = time.monotonic()
    code, output = _run(campaign, tmp_path / "out", "--address", f"127.0.0.1:{port}",
                        "--connect-timeout-s", "3", timeout_s=60.0)
    assert code == 2, output
    assert f"no Ray cluster answered at 127.0.0.1:{port} within 3 s" in output, output
    assert f"ray start --head --port {port}" in output
    assert time.monotonic() - started < 30.0  # not Ray's minutes of retries
    assert not (tmp_path / "out" / "runs.csv").exists()


def test_a_port_that_answers_but_is_no_ray_head_ends_the_campaign_after_the_timeout(tmp_path):
    pytest.importorskip("ray", reason="Ray is not installed (the learners' extras: ACRES_LEARN=1 bootstrap)")
    import socket

    campaign = _campaign(tmp_path, "grid:\n  objects.bale1.pose.y: [-28.0]\n")
    with socket.socket() as listening:  # takes connections, says nothing
        listening.bind(("127.0.0.1", 0))
        listening.listen(16)
        address = f"127.0.0.1:{listening.getsockname()[1]}"
        started = time.monotonic()
        code, output = _run(campaign, tmp_path / "out", "--address", address, "--connect-timeout-s", "8",
                            timeout_s=120.0)
    assert code == 2, output
    assert f"the Ray cluster at {address} takes connections, but Ray did not join it within 8 s" in output
    assert time.monotonic() - started < 60.0


def test_a_local_campaign_never_joins_a_cluster_left_on_the_machine(tmp_path):
    """Ray without an address joins the last cluster `ray start` made on the machine (and refused
    then: "num_cpus must not be provided"); a campaign without --address starts its own."""
    pytest.importorskip("ray", reason="Ray is not installed (the learners' extras: ACRES_LEARN=1 bootstrap)")
    from harness.graph import free_port

    ray_cli = str(Path(sys.executable).with_name("ray"))
    port = free_port()
    subprocess.run([ray_cli, "start", "--head", "--port", str(port), "--node-ip-address", "127.0.0.1",
                    "--num-cpus", "1", "--include-dashboard", "false", "--disable-usage-stats"],
                   env=_env(), check=True, capture_output=True, timeout=120)
    try:
        campaign = _campaign(tmp_path, "grid:\n  objects.bale1.pose.y: [-20.0]\n")
        code, output = _run(campaign, tmp_path / "out", "--workers", "1")
        assert code == 0, output
        assert "1 at once on this machine (a local Ray instance)" in output, output
        assert f"127.0.0.1:{port}" not in output
    finally:
        subprocess.run([ray_cli, "stop", "--force"], env=_env(), capture_output=True, timeout=120)


def _browser() -> str:
    names = ("chromium", "chromium-browser", "google-chrome")
    found = next((shutil.which(b) for b in names if shutil.which(b)), None)
    if found is None:
        pytest.skip("no Chromium to open the campaign's page in (apt-get install chromium)")
    return found


@pytest.mark.variant
def test_the_campaign_page_opens_in_a_browser_with_every_run_and_a_view_of_each_failure(tmp_path):
    """DIR/index.html as a user opens it, in headless Chromium from disk: its table holds every run
    (counted in the DOM after the page's script ran), each failing run has a top view with its
    contact, and the page is drawn (a screenshot that is not blank)."""
    browser = _browser()
    campaign = _campaign(tmp_path, "grid:\n  objects.bale1.pose.y: [-28.0, -20.0]\n")
    out = tmp_path / "out"
    code, output = _run(campaign, out, "--workers", "2")
    assert code == 1, output
    page = out / "index.html"
    assert f"page {page}" in output
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1300,1200"]
    dom = subprocess.run([browser, *flags, "--dump-dom", page.as_uri()], capture_output=True, text=True,
                         timeout=120).stdout
    rows = re.findall(r'<tr class="(passed|failed|error|timeout)" id="row-(run\d+)"', dom)
    assert sorted(rows) == [("failed", "run0000"), ("passed", "run0001")], dom[:2000]
    assert '<span id="shown">2</span>' in dom  # set by the page's script: it ran
    views = re.findall(r'<figure id="view-(run\d+)">(.*?)</figure>', dom, re.S)
    assert [v[0] for v in views] == ["run0000"]
    assert 'stroke="red"' in views[0][1] and "polaris met bale1" in views[0][1]  # the contact drawn
    assert "[m/s]" in dom and 'class="negative"' in dom  # units, and the failed criterion's margin
    shot = tmp_path / "page.png"
    subprocess.run([browser, *flags, f"--screenshot={shot}", page.as_uri()], capture_output=True,
                   timeout=120, check=True)
    import matplotlib.image

    pixels = matplotlib.image.imread(shot)[..., :3]
    drawn = (pixels < 0.9).any(axis=2).mean()  # the share of pixels that are not white
    assert pixels.shape[:2] == (1200, 1300) and drawn > 0.05, drawn


@pytest.mark.variant
def test_a_search_draws_each_batch_from_the_margins_before_it_and_resumes_with_the_same_runs(tmp_path):
    """A search of 4 runs in batches of 2 toward no_collision: the second batch starts only once the
    first is told, its values are what the sampler draws from those runs' margins (replayed from
    their reports), and the campaign run again redoes nothing."""
    from acres_sim.campaign.run import margins_of

    campaign = _campaign(tmp_path, "search:\n  runs: 4\n  batch: 2\n  seed: 4\n  toward: no_collision\n"
                                   "  objects.bale1.pose.y: {uniform: [-30.0, -20.0]}\n")
    out = tmp_path / "out"
    code, output = _run(campaign, out, "--workers", "2")
    assert code in (0, 1), output
    said = [line.split()[1] for line in output.splitlines() if re.match(r"campaign: run\d{4} ", line)]
    assert sorted(said[:2]) == ["run0000", "run0001"] and sorted(said[2:]) == ["run0002", "run0003"], output
    rows = {r["run"]: r for r in _table(out)}
    replay = load_campaign(campaign).sampler
    drawn = []
    while batch := replay.pending():
        drawn += batch
        for run in batch:
            replay.tell(run, margins_of(json.loads((out / "runs" / run.name / "report.json").read_text())))
    assert [r.name for r in drawn] == sorted(rows)
    assert all(float(rows[r.name]["objects.bale1.pose.y"]) == r.values["objects.bale1.pose.y"] for r in drawn)
    code, again = _run(campaign, out, "--workers", "2")
    assert "(4 finished before)" in again and not re.search(r"campaign: run\d{4} ", again), again
